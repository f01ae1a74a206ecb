# pytester's in-process runs drop the modules an inner run imports; NumPy's and SciPy's extensions cannot be
# loaded twice, so everything the plugin imports lazily is imported here, before any inner run.
import scipy.special  # noqa: F401
import wgpu  # noqa: F401
import wgpu.backends.wgpu_native  # noqa: F401

import cases  # noqa: F401
import cases.data  # noqa: F401
import reference  # noqa: F401
