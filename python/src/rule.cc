#include "python/src/rule.h"

#include <string>

#include "protocol/rule_config.h"
#include "python/src/status_error.h"
#include "trainer/pserver_client.h"

namespace py = pybind11;

namespace fabps::python {

namespace {

using trainer::LrSchedule;
using trainer::RuleKind;
using trainer::UpdateRuleConfig;

RuleKind KindFromName(const std::string& name) {
  auto kind = protocol::RuleKindFromName(name);
  if (!kind.ok()) ThrowStatus(kind.status().WithContext("Rule kind"));
  return *kind;
}

const char* ScheduleName(LrSchedule s) {
  return s == LrSchedule::kLinearDecay ? "linear_decay" : "constant";
}

LrSchedule ScheduleFromName(const std::string& name) {
  for (LrSchedule s : {LrSchedule::kConstant, LrSchedule::kLinearDecay})
    if (name == ScheduleName(s)) return s;
  ThrowStatus(Status::InvalidArgument("Rule schedule '" + name +
                                      "': not one of constant, linear_decay"));
}

std::string Repr(const UpdateRuleConfig& c) {
  return std::string("fabps.Rule(kind='") + trainer::RuleName(c.kind) +
         "', lr=" + py::repr(py::float_(c.learning_rate)).cast<std::string>() +
         ", schedule='" + ScheduleName(c.schedule) + "', ...)";
}

}  // namespace

void DefineRule(py::module_& m) {
  const UpdateRuleConfig d;  // the defaults, in one place: the C++ struct
  py::class_<UpdateRuleConfig> rule(m, "Rule", R"doc(
An update rule the pservers apply to a parameter (protocol/rule_config.h):
kind 'sgd' (w -= lr*g), 'momentum', 'nesterov', 'adam', 'adagrad'; lr; the
schedule 'constant' or 'linear_decay' (lr to final_lr over decay_steps);
momentum; beta1, beta2, epsilon; adagrad_initial; weight_decay; clip_value
and clip_norm (0: off). Validated when built (fabps.InvalidArgument).
Rule.KINDS names every kind.)doc");
  py::list kinds;
  for (const std::string& name : protocol::RuleNames()) kinds.append(name);
  rule.attr("KINDS") = py::tuple(kinds);
  rule.def(py::init([](const std::string& kind, double lr,
                       const std::string& schedule, double final_lr,
                       uint64_t decay_steps, double momentum, double beta1,
                       double beta2, double epsilon, double adagrad_initial,
                       double weight_decay, double clip_value,
                       double clip_norm) {
             UpdateRuleConfig c;
             c.kind = KindFromName(kind);
             c.learning_rate = lr;
             c.schedule = ScheduleFromName(schedule);
             c.final_learning_rate = final_lr;
             c.decay_steps = decay_steps;
             c.momentum = momentum;
             c.beta1 = beta1;
             c.beta2 = beta2;
             c.epsilon = epsilon;
             c.adagrad_initial = adagrad_initial;
             c.weight_decay = weight_decay;
             c.clip_value = clip_value;
             c.clip_norm = clip_norm;
             Status valid = trainer::ValidateRuleConfig(c);
             if (!valid.ok()) ThrowStatus(valid.WithContext("fabps.Rule"));
             return c;
           }),
           py::arg("kind") = std::string(trainer::RuleName(d.kind)),
           py::arg("lr") = d.learning_rate,
           py::arg("schedule") = std::string(ScheduleName(d.schedule)),
           py::arg("final_lr") = d.final_learning_rate,
           py::arg("decay_steps") = d.decay_steps,
           py::arg("momentum") = d.momentum, py::arg("beta1") = d.beta1,
           py::arg("beta2") = d.beta2, py::arg("epsilon") = d.epsilon,
           py::arg("adagrad_initial") = d.adagrad_initial,
           py::arg("weight_decay") = d.weight_decay,
           py::arg("clip_value") = d.clip_value,
           py::arg("clip_norm") = d.clip_norm)
      .def_property_readonly(
          "kind",
          [](const UpdateRuleConfig& c) { return trainer::RuleName(c.kind); })
      .def_property_readonly(
          "schedule",
          [](const UpdateRuleConfig& c) { return ScheduleName(c.schedule); })
      .def_readonly("lr", &UpdateRuleConfig::learning_rate)
      .def_readonly("final_lr", &UpdateRuleConfig::final_learning_rate)
      .def_readonly("decay_steps", &UpdateRuleConfig::decay_steps)
      .def_readonly("momentum", &UpdateRuleConfig::momentum)
      .def_readonly("beta1", &UpdateRuleConfig::beta1)
      .def_readonly("beta2", &UpdateRuleConfig::beta2)
      .def_readonly("epsilon", &UpdateRuleConfig::epsilon)
      .def_readonly("adagrad_initial", &UpdateRuleConfig::adagrad_initial)
      .def_readonly("weight_decay", &UpdateRuleConfig::weight_decay)
      .def_readonly("clip_value", &UpdateRuleConfig::clip_value)
      .def_readonly("clip_norm", &UpdateRuleConfig::clip_norm)
      .def("__repr__", &Repr);
}

}  // namespace fabps::python
