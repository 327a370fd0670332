"""The contract catalog with two weeks of audited outputs of the demo agents (contract_demo.py).

The demo accounts and agent keys are not made here: `load_demo` creates them once, on an empty
database, through controlplane.demo_credentials.
"""

from __future__ import annotations

from typing import TextIO

from governance.contracts import demo as contract_demo


def load(out: TextIO) -> None:
    contract_demo.load(out)
