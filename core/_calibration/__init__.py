"""The response score's calibration, in one place.

- ``_signals``: what a map reads of an answer (``ResponseSignals``) and the one table of
  the map's terms (``TERMS``), which the score, the fit and the file checks read;
- ``_map``: the map (``ResponseCalibration``), the calibrated score and a route's map
  (``RouteCalibration``);
- ``_file``: the file ``truthlens calibrate`` writes and routes point to, read and checked
  with no model code (a policy checks the file it names when it loads);
- ``_fit``: the fit behind ``truthlens calibrate`` (a length-safe logistic map) and the
  threshold chosen for a precision or false-alarm target.

Internal: the adapters and the command line reach these names through
:mod:`truthlens_integrations.core._adapter_api`.
"""
