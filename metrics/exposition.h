// The pieces of the Prometheus text exposition format (0.0.4) that need
// care: escaping and number formatting. Registry::Expose writes the lines.
#ifndef FABPS_METRICS_EXPOSITION_H_
#define FABPS_METRICS_EXPOSITION_H_

#include <string>
#include <string_view>

#include "metrics/registry.h"

namespace fabps::metrics {

// A HELP line's text: backslash and newline escaped (\\ and \n).
std::string EscapeHelp(std::string_view help);
// A label value: backslash, double quote and newline escaped.
std::string EscapeLabelValue(std::string_view value);
// A sample value or an "le" bound: the shortest decimal that reads back as
// the same double; "+Inf", "-Inf", "NaN" for those.
std::string FormatValue(double v);
// {a="x",b="y"} (empty string when there are no labels).
std::string FormatLabels(const Labels& labels);

// Prometheus's name rules (see registry.h).
bool ValidMetricName(std::string_view name);
bool ValidLabelName(std::string_view name);

// The Content-Type of the exposition.
inline constexpr char kContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";

}  // namespace fabps::metrics

#endif  // FABPS_METRICS_EXPOSITION_H_
