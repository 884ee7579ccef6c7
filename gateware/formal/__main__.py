# SPDX-License-Identifier: BSD-2-Clause
"""``python -m pcispy.gateware.formal``: see :mod:`pcispy.gateware.formal.run`."""

import sys

from .run import main

__all__ = []

sys.exit(main())
