# SPDX-License-Identifier: BSD-2-Clause
"""``python -m pcispy.formal``: see :mod:`pcispy.formal.run`."""

import sys

from pcispy.formal.run import main

__all__ = []

sys.exit(main())
