"""The reference solver's plans, one per starter-suite task (tests/eval/reference_solver.py).

Each plan acts only on what the current state shows, finding elements by role and name, the
way an agent reads the tree; each ends in the state its task's criteria describe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

Agent = Any  # reference_solver.Agent (imported by it; no cycle at import time)
Plan = Callable[[Agent], Awaitable[None]]

CALC_KEYS = {"+": "+ +", "-": "− −", "*": "× ×", "/": "÷ ÷", "=": "= ="}


async def _entry(agent: Agent, value: str) -> None:
    await agent.set_field("textField", None, value)
    await agent.click("button", "OK")


async def _form(agent: Agent, values: dict[str, str]) -> None:
    for label, value in values.items():
        await agent.set_field("textField", label, value)
    await agent.click("button", "OK")


async def _calculate(agent: Agent, expression: str) -> None:
    """Press the buttons for ``expression`` (digits and + - * / =), one settled press each."""
    for ch in expression:
        label = CALC_KEYS.get(ch, f"{ch} {ch}")
        await agent.click("button", label)


async def _save(agent: Agent) -> None:
    await agent.keys("ctrl+s")
    await asyncio.sleep(0.5)


def register_all(plan: Callable[[str], Callable[[Plan], Plan]]) -> None:
    @plan("zenity-entry-name")
    async def _(agent: Agent) -> None:
        await _entry(agent, "Grace Hopper")

    @plan("zenity-entry-replace")
    async def _(agent: Agent) -> None:
        await _entry(agent, "Final report")

    @plan("zenity-form-register")
    async def _(agent: Agent) -> None:
        await _form(agent, {"Name": "Ada Lovelace", "City": "Paris"})

    @plan("zenity-form-address")
    async def _(agent: Agent) -> None:
        await _form(agent, {"Street": "12 Rue de Rivoli", "Postcode": "75001", "Country": "France"})

    @plan("zenity-form-combo")
    async def _(agent: Agent) -> None:
        await agent.set_field("textField", "Name", "Alan")
        await agent.set_field("comboBox", "Size", "M")
        await agent.click("button", "OK")

    @plan("zenity-list-pick")
    async def _(agent: Agent) -> None:
        await agent.click("cell", "banana")
        await agent.click("button", "OK")

    @plan("zenity-list-colour")
    async def _(agent: Agent) -> None:
        await agent.click("cell", "cherry")
        await agent.click("button", "OK")

    @plan("zenity-checklist")
    async def _(agent: Agent) -> None:
        for topping in ("cheese", "basil"):
            st = agent.current()
            toggle = st.find("cell", topping) - 1  # the check cell opens the row
            await agent.act("invoke_element", element_id=toggle, action="Toggle")
        await agent.click("button", "OK")

    @plan("zenity-scale")
    async def _(agent: Agent) -> None:
        await agent.set_field("slider", None, "42")
        await agent.click("button", "OK")

    @plan("zenity-text-edit")
    async def _(agent: Agent) -> None:
        await agent.set_field("textField", None, "Meeting moved to Friday")
        await agent.click("button", "OK")

    @plan("calculator-add")
    async def _(agent: Agent) -> None:
        await _calculate(agent, "17+25=")

    @plan("calculator-multiply")
    async def _(agent: Agent) -> None:
        await _calculate(agent, "12*7=")

    @plan("calculator-subtract")
    async def _(agent: Agent) -> None:
        await _calculate(agent, "250-75=")

    @plan("calculator-divide")
    async def _(agent: Agent) -> None:
        await _calculate(agent, "144/12=")

    @plan("calculator-clear-first")
    async def _(agent: Agent) -> None:
        await agent.click("button", contains="Clear Display")
        await _calculate(agent, "6*9=")

    @plan("mousepad-append-line")
    async def _(agent: Agent) -> None:
        await agent.set_field("textField", None, "line one\nline two\n")
        await _save(agent)

    @plan("mousepad-replace-all")
    async def _(agent: Agent) -> None:
        await agent.set_field("textField", None, "colour is spelt color here")
        await _save(agent)

    @plan("mousepad-new-file")
    async def _(agent: Agent) -> None:
        await agent.set_field("textField", None, "buy milk")
        await _save(agent)

    @plan("mousepad-clear-file")
    async def _(agent: Agent) -> None:
        await agent.set_field("textField", None, "")
        await _save(agent)

    @plan("chromium-send-order")
    async def _(agent: Agent) -> None:
        await agent.type("Ada", "textField", "Customer")
        await agent.click("button", "Send order")

    @plan("chromium-accept-terms")
    async def _(agent: Agent) -> None:
        await agent.click("checkBox", contains="accept the terms")

    @plan("chromium-open-receipt")
    async def _(agent: Agent) -> None:
        await agent.click("link", "Show the receipt")

    @plan("chromium-reveal-code")
    async def _(agent: Agent) -> None:
        await agent.click("button", "Reveal pickup code")
