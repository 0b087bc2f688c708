// fabps.Rule: the update rule a pserver applies to a parameter
// (trainer::UpdateRuleConfig, see pserver/update_rule.h), with the C++
// struct's defaults and its validation.
#ifndef FABPS_PYTHON_SRC_RULE_H_
#define FABPS_PYTHON_SRC_RULE_H_

#include <pybind11/pybind11.h>

namespace fabps::python {

void DefineRule(pybind11::module_& m);

}  // namespace fabps::python

#endif  // FABPS_PYTHON_SRC_RULE_H_
