# SPDX-License-Identifier: BSD-2-Clause
"""A Debian tool for a test that checks pcispy's output with the real thing (lspci,
tshark): found on PATH, or installed with apt-get when the tests run as root."""

import os
import shutil
import subprocess

__all__ = ["debian_tool"]


def debian_tool(binary, package):
    """``(path, None)`` of ``binary``, installing Debian's ``package`` if it is missing;
    ``(None, reason)`` when it is missing and cannot be installed (the caller skips only
    its own check and prints the reason)."""
    found = shutil.which(binary)
    if found:
        return found, None
    if shutil.which("apt-get") is None:
        return None, f"{binary} is missing and apt-get is not available to install {package}"
    if os.geteuid() != 0:
        return None, f"{binary} is missing and only root can install {package} with apt-get"
    install = ["apt-get", "install", "-y", "-q", package]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        if subprocess.run(install, capture_output=True, timeout=600, env=env).returncode:
            # A fresh machine may have empty package lists ("no installation candidate").
            subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True,
                           timeout=300, env=env)
            subprocess.run(install, check=True, capture_output=True, timeout=600, env=env)
    except (subprocess.SubprocessError, OSError) as error:
        return None, f"{binary} is missing and {package} could not be installed: {error}"
    return shutil.which(binary), None
