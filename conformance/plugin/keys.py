"""What the case runner (:mod:`conformance.plugin.session`) hands the run's state (:mod:`conformance.plugin.state`):
the user properties of a test's report, what an xdist worker sends the controller at its end, and how the runner's
collection error for an implementation that cannot run here begins. Plain names, so that either side reads them
without loading the other."""

#: The user property of a conformance test: its verdict, as JSON.
VERDICT_KEY = "conformance"
#: The user property of a case an ``--expectations`` entry covers: that entry's pattern and reason, as JSON.
EXPECTATION_KEY = "conformance_expectation"
#: The user property of a failing case with a standalone repro entry (--repro-dir), as JSON.
REPRO_KEY = "conformance_repro"
#: The user property of a case run by an implementation that counts its shader compilations: [pid, count], as JSON.
COMPILATIONS_KEY = "conformance_compilations"
#: What a worker sends the controller at its end (xdist's workeroutput): identity, device, heavy count.
WORKER_KEY = "conformance"
#: How the case runner's collection error for an --impl that cannot run here begins.
UNAVAILABLE = "--impl {name} is not available here: "
