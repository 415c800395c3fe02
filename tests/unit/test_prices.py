"""Prices keep their dates: a price holds for a period, a turn is priced on its own day (Google's billing
day, whatever the machine's zone); a tiered model's long-prompt rates, request by request; the table, its
overrides (with periods of their own), gemini-4-argon's thinking level over the wire, and %gemini prices
(the other Gemini 4 models: test_gemini_4_models.py)."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from zoneinfo import ZoneInfo

import pytest
from helpers.footer import footer_line
from helpers.kernel import FAKE_KEY, Kernel
from helpers.wire import api_requests

from genai_magics import messages
from genai_magics.engine.errors import UserError
from genai_magics.gemini.budget import FIRST_TURN_OUTPUT, estimate, request_tokens
from genai_magics.gemini.models import DEFAULT_MODEL, traits
from genai_magics.gemini.pricing import (
    BILLING_DAY_SOURCE,
    LONG_PROMPT,
    PRICES,
    PRICING_PAGE,
    Period,
    billing_day,
    check_overrides,
    overlap,
    periods,
    price_for,
    turn_cost,
)
from genai_magics.turn.session import Session

LAST_INTRO = dt.date(2026, 12, 31)
AFTER = dt.date(2027, 1, 2)
ARGON = "gemini-4-argon"
PRO = "gemini-3.1-pro"
PACIFIC = ZoneInfo("America/Los_Angeles")
# two zones 25 hours apart: their local dates differ at every instant
FAR_APART = ("Pacific/Kiritimati", "Pacific/Pago_Pago")
MINE = {"input": 1, "cached_input": 0.1, "output": 2, "storage_hour": 1}


def test_the_default_models_price_doubles_on_2027_01_01_and_argons_on_2026_12_01():
    intro, full = price_for(DEFAULT_MODEL, day=LAST_INTRO), price_for(DEFAULT_MODEL, day=dt.date(2027, 1, 1))
    assert (intro.input, intro.output, full.input, full.output) == (0.75, 3.75, 1.50, 7.50)
    assert price_for(DEFAULT_MODEL, day=AFTER) == full
    argon = [price_for(ARGON, day=dt.date(2026, 11, d)) for d in (30,)] + [price_for(ARGON, day=dt.date(2026, 12, 1))]
    assert [(p.input, p.cached_input, p.output) for p in argon] == [(2.0, 0.1, 10.0), (4.0, 0.2, 20.0)]
    assert all("ai.google.dev" in p.source for p in argon)  # the sources used are in the table
    # no day of the table has two prices, and every model has a price today
    assert all(overlap(ps) is None for ps in PRICES.values())
    assert all(price_for(m) is not None for m in PRICES)


def test_overlap_finds_two_periods_sharing_a_day_and_open_ends_reach_everywhere():
    p = PRICES[DEFAULT_MODEL][0].price
    day = dt.date
    assert overlap([Period(p, end=day(2027, 1, 1)), Period(p, start=day(2027, 1, 2))]) is None
    assert overlap([Period(p, end=day(2027, 1, 2)), Period(p, start=day(2027, 1, 2))]) is not None  # one day
    assert overlap([Period(p), Period(p, start=day(3000, 1, 1))]) is not None
    assert overlap([Period(p, start=day(2027, 5, 1)), Period(p, end=day(2027, 1, 1))]) is None  # any order


def test_an_override_without_dates_holds_every_day_and_keeps_the_tables_other_fields():
    cheaper = {DEFAULT_MODEL: {"input": 0.5}}
    assert [(p.describe(), p.price.input, p.price.output) for p in periods(DEFAULT_MODEL, cheaper)] == [
        ("through 2026-12-31", 0.5, 3.75),
        ("since 2027-01-01", 0.5, 7.50),
    ]
    # a period of the user's own covers the table's on its days only
    spring = {DEFAULT_MODEL: [{"input": 0.5, "from": "2027-03-01", "until": "2027-03-31"}]}
    assert [(p.describe(), p.price.input) for p in periods(DEFAULT_MODEL, spring)] == [
        ("through 2026-12-31", 0.75),
        ("2027-01-01 to 2027-02-28", 1.50),
        ("2027-03-01 to 2027-03-31", 0.5),
        ("since 2027-04-01", 1.50),
    ]
    # a model the table does not know, priced for a period only: tokens only outside it
    mine = {"mine": {**MINE, "until": "2027-03-31"}}
    assert price_for("mine", mine, dt.date(2027, 3, 31)).input == 1
    assert price_for("mine", mine, dt.date(2027, 4, 1)) is None


@pytest.mark.parametrize(
    ("given", "message", "fields"),
    [
        (
            {"mine": [{**MINE, "until": "2027-03-31"}, {**MINE, "from": "2027-03-01"}]},
            messages.PRICE_PERIODS_OVERLAP,
            dict(model="mine", first="through 2027-03-31", second="since 2027-03-01"),
        ),
        (
            {"mine": {"input": 1}},
            messages.PRICE_FIELDS_MISSING,
            dict(model="mine", missing=["cached_input", "output", "storage_hour"]),
        ),
        # a day the table has no price for: 2026-12-31 is before the user's period, after the table's end
        (
            {"mine": [{**MINE, "from": "2027-01-01"}, {"input": 2, "until": "2026-12-31"}]},
            messages.PRICE_FIELDS_MISSING,
            dict(model="mine", missing=["cached_input", "output", "storage_hour"]),
        ),
        ({DEFAULT_MODEL: {"input": "cheap"}}, messages.PRICE_VALUE_BAD, dict(model=DEFAULT_MODEL, fields=["input"])),
        ({DEFAULT_MODEL: {"input": -1}}, messages.PRICE_VALUE_BAD, dict(model=DEFAULT_MODEL, fields=["input"])),
        (
            {DEFAULT_MODEL: {"from": "2027-13-01"}},
            messages.PRICE_DATE_BAD,
            dict(model=DEFAULT_MODEL, key="from", value="2027-13-01"),
        ),
        (
            {DEFAULT_MODEL: {"from": "2027-02-01", "until": "2027-01-01"}},
            messages.PRICE_PERIOD_EMPTY,
            dict(model=DEFAULT_MODEL, start="2027-02-01", end="2027-01-01"),
        ),
        ({DEFAULT_MODEL: [3]}, messages.PRICE_ENTRY_BAD, dict(model=DEFAULT_MODEL, kind="int")),
        ({3: {"input": 1}}, messages.PRICE_MODEL_BAD, dict(key=3)),
    ],
)
def test_overrides_that_cannot_price_a_day_are_one_line(given, message, fields):
    with pytest.raises(UserError) as refused:
        check_overrides(given)
    assert refused.value.message is message and str(refused.value) == message.render(**fields)


def test_gemini_4_argon_takes_a_thinking_level_and_no_explicit_cache_unlike_the_default_model():
    assert traits(ARGON).thinking_level == "medium" and not traits(ARGON).explicit_cache
    assert traits(f"models/{ARGON}") == traits(ARGON)
    assert traits(DEFAULT_MODEL).thinking_level is None and traits(DEFAULT_MODEL).explicit_cache
    assert traits("a-model-nobody-knows").thinking_level is None


# -- over the wire: the real SDK against the stand-in, in an in-process shell -------------------

CODE = "def parse(s):\n    return int(s)\n"


@pytest.mark.parametrize("state", ["contents", "interactions"])
def test_gemini_4_argon_is_sent_its_thinking_level_and_never_a_budget(magic_shell, stub, state):
    magic_shell.run(CODE, cell_id="code")
    argon = magic_shell.run(f"%%gemini_ask --model {ARGON} --state {state}\nwhy int?", cell_id="m1")
    flash = magic_shell.run(f"%%gemini_ask -c other --state {state}\nwhy int?", cell_id="m2")
    assert "Stub answer to: why int?" in argon.plain and "Stub answer to: why int?" in flash.plain, argon.stderr
    (to_argon, to_flash) = api_requests(stub)
    if state == "contents":  # the SDK's own JSON: generationConfig.thinkingConfig, its field as the SDK names it
        sent = to_argon["json"]["generationConfig"]["thinkingConfig"]
        assert sent == {"thinking_level": "MEDIUM"}
        assert "thinkingConfig" not in (to_flash["json"].get("generationConfig") or {})  # as before
    else:
        sent = to_argon["json"]["generation_config"]
        assert sent == {"thinking_level": "medium"} and "thinking_budget" not in sent
        assert "generation_config" not in to_flash["json"]
    assert "budget" not in json.dumps(to_argon["json"]).lower()


def test_the_stand_in_refuses_a_thinking_budget_for_argon_so_the_test_above_can_fail(stub):
    from google import genai
    from google.genai import errors, types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stub.url))
    budget = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=128))
    with pytest.raises(errors.ClientError) as refused:
        client.models.generate_content(model=ARGON, contents="hi", config=budget)
    assert refused.value.code == 400
    level = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_level="MEDIUM"))
    assert client.models.generate_content(model=ARGON, contents="hi", config=level).text


def test_a_model_not_in_the_table_still_works_and_shows_tokens_only(magic_shell, stub):
    magic_shell.run(CODE, cell_id="code")
    shown = magic_shell.run("%%gemini_ask --model gemini-9-unknown -c unpriced --new\nwhy int?", cell_id="m1")
    footer = footer_line(shown.plain, turn=1)
    assert messages.FOOTER_TURN.within(footer, model="gemini-9-unknown") and "~$" not in footer
    (request,) = api_requests(stub)
    assert "thinkingConfig" not in (request["json"].get("generationConfig") or {})


def test_the_same_turn_costs_twice_as_much_on_2027_01_02_as_on_2026_12_31(magic_shell, stub):
    """The closing note's two footers: the same turn (same request, same answer) on either side of the
    end of gemini-3.8-flash's introductory price, the turn's day set on the session's clock."""
    magic_shell.run(CODE, cell_id="code")
    footers = []
    for day in (LAST_INTRO, AFTER):
        magic_shell.magics.session.today = lambda day=day: day
        footers.append(footer_line(magic_shell.run(f"%%gemini_ask -c on{day:%m%d} --new\nwhy int?", cell_id="m").plain))
    print("\n".join(footers))  # what the closing note quotes (pytest -s)
    before, after = (magic_shell.magics.session.conversations[f"on{d:%m%d}"].history[-1] for d in (LAST_INTRO, AFTER))
    tokens = [(t.usage.input_tokens, t.usage.output_tokens) for t in (before, after)]
    assert tokens[0] == tokens[1]
    assert (before.usage.priced_on, after.usage.priced_on) == ("2026-12-31", "2027-01-02")
    assert after.usage.cost_usd == pytest.approx(2 * before.usage.cost_usd)
    assert footers[0].replace(f"~${before.usage.cost_usd:.2g}", f"~${after.usage.cost_usd:.2g}") == footers[1]
    # a listed turn keeps its own day's price: %gemini tokens on 2027-01-02 shows both as they were
    for name, turn in (("on1231", before), ("on0102", after)):
        table = magic_shell.run(f"%gemini tokens -c {name}").stdout
        (row,) = [line.split() for line in table.splitlines() if line.split()[:1] == ["1"]]
        assert row[-2] == f"{turn.usage.cost_usd:.4f}"


def test_gemini_prices_shows_the_periods_and_sources(magic_shell, stub):
    magic_shell.magics.session.today = lambda: LAST_INTRO
    shown = magic_shell.run("%gemini prices")
    lines = shown.stdout.splitlines()
    flash = [line for line in lines if line[2:].startswith(DEFAULT_MODEL + " ")]
    assert flash[0].startswith("*") and "through 2026-12-31" in flash[0] and "0.75" in flash[0]
    assert flash[1].startswith(" ") and "since 2027-01-01" in flash[1] and "1.5" in flash[1]

    # each row names its source by number, each note once below the table: Google's pricing page for the
    # models it lists, one note for the others, the billing day's; never an aggregator's post (issue 41)
    def note_of(model: str) -> str:
        row = next(line for line in lines if line[2:].startswith(f"{model} "))
        [mark] = re.search(r"  ((?:\d+ ?)+)$", row).group(1).split()
        return next(line for line in lines if line.startswith(f"  [{mark}] "))

    assert note_of("gemini-2.5-pro") == f"  [2] Google's Gemini API pricing page, {PRICING_PAGE}"
    assert note_of(ARGON).startswith("  [1] not on Google's pricing page")
    assert [line for line in lines if re.match(r"  \[\d+\] ", line)][2].startswith("  [3] the price day")
    notes = shown.stdout[shown.stdout.index(messages.PRICES_SOURCES.render()) :]
    for aggregator in ("litellm", "morphllm", "byteiota", "apiyi", "deploybase", "glbgpt", "dev.to"):
        assert aggregator not in notes
    # an override shows as the table applied, for its own period
    magic_shell.magics.prices = {"mine": {**MINE, "from": "2027-01-01"}}
    mine = magic_shell.run("%gemini prices mine").stdout
    assert "mine" in mine and "since 2027-01-01" in mine and "GeminiMagics.prices" in mine
    unknown = magic_shell.run("%gemini prices gemini-9")
    assert unknown.stderr.strip() == messages.NO_PRICE_KNOWN.shown(model="gemini-9")
    assert unknown.stdout == ""


@pytest.mark.kernel
def test_bad_price_overrides_are_one_line_and_keep_the_old_prices(kernel):
    good = "{'gemini-3.8-flash': {'input': 0.5}}"
    assert kernel.run(f"%config GeminiMagics.prices = {good}").stderr == ""
    cases = [
        ("{'gemini-3.8-flash': {'inptu': 1}}", messages.PRICE_FIELDS_UNKNOWN),
        ("{'mine': {'input': 1}}", messages.PRICE_FIELDS_MISSING),
        (
            "{'mine': [{'input': 1, 'cached_input': 0.1, 'output': 2, 'storage_hour': 1, 'until': '2027-03-31'},"
            " {'input': 1, 'cached_input': 0.1, 'output': 2, 'storage_hour': 1, 'from': '2027-03-01'}]}",
            messages.PRICE_PERIODS_OVERLAP,
        ),
        ("{'gemini-3.8-flash': {'from': 'soon'}}", messages.PRICE_DATE_BAD),
    ]
    for given, message in cases:
        refused = kernel.run(f"%config GeminiMagics.prices = {given}")
        (line,) = refused.stderr.splitlines()
        assert line.startswith("ERROR:root:") and message.parse(line.removeprefix("ERROR:root:")) is not None, line
    held = kernel.run("print(get_ipython().magics_manager.registry['GeminiMagics'].prices, end='')").stdout
    assert held == str(eval(good))  # the prices stay as they were
    assert "0.5" in kernel.run("%gemini prices gemini-3.8-flash").stdout


def test_argon_is_never_sent_an_explicit_cache_where_flash_gets_one(magic_shell, stub):
    big = "".join(f"def f{i}(x):\n    return x + {i}  # a long enough document\n" for i in range(400))
    magic_shell.run(big, cell_id="big")
    for conv, model in (("c-argon", ARGON), ("c-flash", DEFAULT_MODEL)):
        stub.clear()
        shown = magic_shell.run(f"%%gemini_ask -c {conv} --new --cell big --model {model}\nwhat is f3?", cell_id="m")
        assert "Stub answer to: what is f3?" in shown.plain, shown.stderr
        made = [r for r in stub.requests if r["kind"] == "cache.create"]
        assert len(made) == (0 if model == ARGON else 1), (model, made)
    magic_shell.run("%gemini reset --all")  # no cache stays behind


# -- the price day: Google's billing day (issue 32.8) ------------------------------------------------


def test_the_price_day_is_googles_billing_day_in_pacific_time_whatever_the_instants_zone():
    utc = dt.UTC
    # 2027-01-01 03:00 UTC is still 2026-12-31 on Google's bill: the introductory price, on every machine
    assert billing_day(dt.datetime(2027, 1, 1, 3, tzinfo=utc)) == LAST_INTRO
    assert billing_day(dt.datetime(2027, 1, 1, 7, 59, tzinfo=utc)) == LAST_INTRO
    assert billing_day(dt.datetime(2027, 1, 1, 8, tzinfo=utc)) == dt.date(2027, 1, 1)  # PST: UTC-8
    assert billing_day(dt.datetime(2027, 7, 1, 6, 59, tzinfo=utc)) == dt.date(2027, 6, 30)  # PDT: UTC-7
    assert billing_day(dt.datetime(2027, 7, 1, 7, tzinfo=utc)) == dt.date(2027, 7, 1)
    tokyo = dt.datetime(2027, 1, 1, 12, tzinfo=ZoneInfo("Asia/Tokyo"))  # the same instant as 03:00 UTC
    assert billing_day(tokyo) == LAST_INTRO
    assert price_for(DEFAULT_MODEL, day=billing_day(tokyo)).input == 0.75


def test_the_sessions_clock_gives_the_same_day_on_machines_a_day_apart(monkeypatch):
    """The turn's day (footers, budgets, %gemini cost, %gemini prices) is the session's clock: on main
    it was the machine's local date, so two kernels 25 hours apart priced the same request on two days."""
    seen = []
    try:
        for zone in FAR_APART:
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            seen.append((dt.date.today(), Session().today()))
    finally:
        monkeypatch.undo()
        time.tzset()
    (local_a, day_a), (local_b, day_b) = seen
    assert local_a != local_b  # the machines' own dates differ ...
    assert day_a == day_b == dt.datetime.now(PACIFIC).date()  # ... the price day does not


@pytest.mark.kernel
def test_two_kernels_a_day_apart_price_on_the_same_day(stub, tmp_path):
    """Real kernels in zones 25 hours apart: %gemini prices marks the same day, and the same ask is
    priced on the same day at the same cost (its footer's ~$, %gemini cost)."""
    shown = []
    for zone in FAR_APART:
        stub.reset()
        k = Kernel(env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "TZ": zone}, cwd=str(tmp_path))
        try:
            k.run("%load_ext genai_magics", cell_id="setup")
            k.run(CODE, cell_id="code")
            assert "Stub answer to: why int?" in k.run(f"%%gemini_ask -c {zone[8:]}\nwhy int?", cell_id="m").plain
            legend = [line for line in k.run("%gemini prices").stdout.splitlines() if line.startswith("* in force")]
            kept = k.run(
                "import datetime as dt\n"
                "from genai_magics.kernel.shell_state import state_of\n"
                f"u = state_of(get_ipython()).session.conversations[{zone[8:]!r}].history[0].usage\n"
                "print(dt.date.today(), u.priced_on, u.cost_usd, end='')"
            ).stdout
            shown.append((legend, *kept.split()))
        finally:
            k.close()
    (legend_a, local_a, day_a, cost_a), (legend_b, local_b, day_b, cost_b) = shown
    assert local_a != local_b  # the kernels' own dates differ ...
    today = dt.datetime.now(PACIFIC).date()
    assert (
        legend_a == legend_b == [messages.PRICES_LEGEND.render(today=today).splitlines()[0]]
    )  # ... their day does not
    assert day_a == day_b == today.isoformat() and cost_a == cost_b


# -- prices by prompt size: a tiered model's long-prompt rates, per request (issue 33.3) --------------


def test_a_tiered_model_charges_its_long_rates_for_a_request_over_200k_tokens():
    pro = price_for(PRO, day=LAST_INTRO)
    assert turn_cost(pro, LONG_PROMPT, 0, 1_000) == pytest.approx((200_000 * 2.00 + 1_000 * 12.00) / 1e6)
    assert turn_cost(pro, LONG_PROMPT + 1, 100_000, 1_000) == pytest.approx(
        (100_001 * 4.00 + 100_000 * 0.40 + 1_000 * 18.00) / 1e6
    )
    older = price_for("gemini-2.5-pro", day=LAST_INTRO)
    assert turn_cost(older, 300_000, 0, 1_000) == pytest.approx((300_000 * 2.50 + 1_000 * 15.00) / 1e6)
    flash = price_for(DEFAULT_MODEL, day=LAST_INTRO)  # one rate at every size
    assert not flash.tiered and turn_cost(flash, 300_000, 0, 0) == pytest.approx(300_000 * 0.75 / 1e6)
    # the budget estimates a request at the rates of its own size
    body = {"contents": [{"role": "user", "parts": [{"text": "x" * 900_000}]}]}
    tokens = request_tokens(body, PRO)
    assert tokens > LONG_PROMPT
    assert estimate(pro, body, [], PRO) == pytest.approx((tokens * 4.00 + FIRST_TURN_OUTPUT * 18.00) / 1e6)
    # a user's override sets the long rates too
    mine = {PRO: {"long_input": 5}}
    assert price_for(PRO, mine, LAST_INTRO).at(LONG_PROMPT + 1).input == 5


def _by_hand(record: dict) -> float:
    """One request's dollars at gemini-3.1-pro's published rates for its own prompt size."""
    prompt, cached, out = record["input_tokens"], record["cached_tokens"], record["response_tokens"]
    fresh_rate, cached_rate, out_rate = (4.00, 0.40, 18.00) if prompt > 200_000 else (2.00, 0.20, 12.00)
    return ((prompt - cached) * fresh_rate + cached * cached_rate + out * out_rate) / 1e6


@pytest.mark.parametrize("state", ["contents", "interactions"])
@pytest.mark.parametrize(("doc_tokens", "long"), [(120_000, False), (210_000, True)])
def test_each_request_of_a_turn_is_priced_by_its_own_prompt_size(magic_shell, stub, state, doc_tokens, long):
    """A turn of two requests (a function call answered): two prompts of 120k tokens are two short ones
    (their sum, over 200k, is no prompt); two of 210k are two long ones. The footer, the turn's usage
    and %gemini cost say the sum of each request priced alone."""
    magic_shell.magics.session.today = lambda: LAST_INTRO
    magic_shell.magics.cache = "off"  # no cache writes: each request is its input, cached part and output
    try:
        magic_shell.run("# " + "word " * (doc_tokens * 4 // 5), cell_id="big")
        stub.script_tools([[{"name": "list_variables", "args": {}}]])
        name = f"tiers-{state}-{doc_tokens}"
        shown = magic_shell.run(f"%%gemini_ask -c {name} --new --state {state} --model {PRO} --cell big\nwhat is it?")
        assert "Stub answer to: what is it?" in shown.plain, shown.stderr
        first, second = api_requests(stub)
        assert all((r["input_tokens"] > LONG_PROMPT) is long for r in (first, second))
        assert first["input_tokens"] + second["input_tokens"] > LONG_PROMPT
        usage = magic_shell.magics.session.conversations[name].history[-1].usage
        assert usage.requests == 2 and usage.cost_usd == pytest.approx(_by_hand(first) + _by_hand(second))
        shown_cost = f"~${usage.cost_usd:,.2f}" if usage.cost_usd >= 1 else f"~${usage.cost_usd:.2g}"
        assert f" · {shown_cost} · " in footer_line(shown.plain, turn=1)
        cost = magic_shell.run("%gemini cost").stdout.splitlines()
        assert any(f"{name}" in line and f"${usage.cost_usd:.6f}" in line for line in cost), cost
    finally:
        magic_shell.magics.cache = magic_shell.magics.trait_defaults("cache")


def test_gemini_prices_shows_the_long_prompt_rates_and_the_billing_days_zone(magic_shell, stub):
    magic_shell.magics.session.today = lambda: LAST_INTRO
    lines = magic_shell.run(f"%gemini prices {PRO}").stdout.splitlines()
    row = lines.index(next(line for line in lines if line[2:].startswith(PRO + " ")))
    over = lines[row + 1].split()
    assert " ".join(over[:3]) == messages.PRICES_LONG_PROMPT.render(tokens="200k").strip()
    assert over[3:] == ["4", "0.4", "18"]
    text = "\n".join(lines)
    assert messages.PRICES_LEGEND.render(today=LAST_INTRO) in text
    notes = " ".join(line.split("] ", 1)[-1].strip() for line in lines[lines.index("sources:") + 1 :])
    day_note = messages.PRICES_DAY_SOURCE.render(source=BILLING_DAY_SOURCE).strip()
    assert day_note in notes  # the zone's source, one of the notes (wrapped between words)
