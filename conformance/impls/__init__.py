"""Built-in implementations under test besides the manifest runtime (see :mod:`conformance.impl`)."""
