"""Standalone reproductions of an outside implementation's failures (``--repro-dir``): ``collect`` makes a
:class:`~conformance.certify.repro.collect.Failure` of what the checker saw and keeps each group's smallest case,
``index`` writes the folder and its index.

Nothing is imported here: the plugin imports ``index`` when pytest loads it, and ``index`` must not bring NumPy
(``collect`` does) into every pytest run of the environment. An implementation's own repro files are its module's
(``conformance.impls``), through its ``repro_files`` hook.
"""
