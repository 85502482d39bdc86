"""The hostile-producer toolkit, under the name the tests import it by.

It lives in the package as `dlbridge.check.producers`, where the conformance checker feeds
its producers to every framework's `from_dlpack`; this module is that very module object, so
its registries (`LOST_EXCEPTIONS` among them) are shared.
"""

import sys

from dlbridge.check import producers as _toolkit

sys.modules[__name__] = _toolkit
