/**
 * The project's own pytest reporter, loaded with `-p sluice_report`: one JSON line per
 * event, flushed as it happens, so a run killed half-way still leaves what it did; the
 * `finish` line proves the session reached its end. `SLUICE_REVERSE_ORDER=1` runs the
 * collected tests last first.
 */
export const PYTEST_PLUGIN_MODULE = 'sluice_report';

export const PYTEST_PLUGIN_SOURCE = String.raw`
import json
import os

_path = os.environ["SLUICE_REPORT_PATH"]
_file = None


def _emit(entry):
    global _file
    if _file is None:
        _file = open(_path, "a", encoding="utf-8")
    _file.write(json.dumps(entry) + "\n")
    _file.flush()


def _text(longrepr):
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)[:8000]


def pytest_collectreport(report):
    if report.failed:
        _emit({"event": "collect_error", "nodeid": report.nodeid, "message": _text(report.longrepr)})


def pytest_runtest_logreport(report):
    entry = {"event": "test", "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
             "duration": report.duration}
    if hasattr(report, "wasxfail"):
        entry["xfail"] = True
    if report.failed or report.skipped:
        entry["message"] = _text(report.longrepr)
    _emit(entry)


def pytest_collection_modifyitems(session, config, items):
    # The proof's order check: the same tests, last first.
    if os.environ.get("SLUICE_REVERSE_ORDER") == "1":
        items.reverse()


def pytest_sessionfinish(session, exitstatus):
    _emit({"event": "finish", "exitstatus": int(exitstatus), "collected": session.testscollected})
`;
