# SPDX-License-Identifier: BSD-2-Clause
"""pcispy.host.transports"""
