# SPDX-License-Identifier: BSD-2-Clause
"""The DMA settings' ranges are declared once, on their register fields
(pcispy/dma/registers.py): the ``pcispy dma`` options, the :func:`~pcispy.dma.dma_feature.dma`
feature and the engine's refusal take exactly the values the declaration allows."""

import argparse
import asyncio

import pytest

from pcispy.csr.map import Access, Field, Legal, Register
from pcispy.dma.dma_feature import SETTINGS, DmaCommand, dma, setting_field
from pcispy.dma.registers import BURST, DMA
from pcispy.host.errors import PcispyError

from pcispy.core.tests.test_initiator_gw import ScriptedTarget
from pcispy.dma.tests.test_dma import run_dma

pytestmark = pytest.mark.dma


def _option_parser():
    parser = argparse.ArgumentParser(exit_on_error=False)
    DmaCommand().add_arguments(parser)
    return parser


#: ``pcispy dma`` option of each :data:`SETTINGS` argument.
_OPTIONS = {"length": "--len", "burst": "--burst", "idle": "--idle",
            "seed": "--seed-pattern", "passes": "--passes", "irdy_wait": "--irdy-wait"}


@pytest.mark.parametrize("argument", sorted(SETTINGS))
def test_option_and_feature_take_the_fields_values(argument):
    accepted = setting_field(argument).accepted
    parser = _option_parser()
    option = _OPTIONS[argument]
    for value in (accepted[0], accepted[-1]):
        assert getattr(parser.parse_args([option, str(value)]), argument if argument !=
                       "seed" else "pattern_seed") == value
    for value in (accepted[0] - 1, accepted[-1] + 1):
        with pytest.raises(argparse.ArgumentError, match=f"{value} is outside "
                                                         f"{accepted[0]}..{accepted[-1]}"):
            parser.parse_args([option, str(value)])
        # The feature refuses it before it touches a transport (there is none here).
        with pytest.raises(PcispyError, match=f"{value}: the board takes "
                                              f"{accepted[0]}..{accepted[-1]}"):
            asyncio.run(dma(None, **{argument: value}))


def test_burst_declaration():
    phases = DMA.register("burst").field("phases")
    assert phases.legal is BURST and (BURST.low, BURST.high) == (1, 4096)
    assert phases.accepted == range(0, 4097)
    assert phases.encode(0) == {"phases": 0, "unlimited": 1}
    assert phases.encode(16) == {"phases": 16, "unlimited": 0}
    assert DMA.register("status").field("err_burst").doc == "refused: burst 0 or over 4096"
    assert "1..4096, 0 for unlimited" in _option_parser().format_help()


@pytest.mark.parametrize("settings, refused", [
    ({"burst.phases": 1}, False),
    ({"burst.phases": BURST.high}, False),
    ({"burst.phases": BURST.high + 1}, True),
    ({"burst.phases": 0}, True),
    ({"burst.phases": 0, "burst.unlimited": 1}, False),
    ({"burst.phases": BURST.high + 1, "burst.unlimited": 1}, False),
    ({"length.length": 0}, True),
])
def test_engine_refuses_outside_the_declaration(settings, refused):
    res = run_dma(settings, ScriptedTarget(devsel=1), clocks=12)
    error = "err_burst" if any(key.startswith("burst") for key in settings) else "err_length"
    assert {k for k, v in res.status.items() if k.startswith("err_") and v} == \
        ({error} if refused else set())


def test_legal_values_checked_where_declared():
    assert str(Legal(1, 7)) == "1..7" and Legal(1, 7).refused == "0 or over 7"
    assert Legal(2).refused == "below 2" and Legal(0, 3).refused == "over 3"
    assert [Legal(2, 5).excludes(v) for v in (1, 2, 5, 6)] == [True, False, False, True]
    with pytest.raises(ValueError, match="starts at 1"):
        Legal(0, 5, unlimited="unlimited")
    with pytest.raises(ValueError, match="no range"):
        Legal(0)
    with pytest.raises(ValueError, match="do not fit"):
        Field("n", 0, 3, Access.RW, 1, legal=Legal(1, 8))
    with pytest.raises(ValueError, match="reset 0 is not legal"):
        Field("n", 0, 3, Access.RW, 0, legal=Legal(1, 7))
    with pytest.raises(ValueError, match="not a one-bit field"):
        Register("r", 0, (Field("n", 0, 3, Access.RW, 1, legal=Legal(1, 7, unlimited="x")),))
