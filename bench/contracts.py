"""Contract validation: our generated validator vs jsonschema vs fastjsonschema on the same outputs.

In process, one thread (so one core): every contract of the shipped catalog (seed 000, 70
contracts) compiled by ``governance.contracts.codegen.compile_contract`` (the generated code the
service runs, every violation in the report), and the same rules as JSON
Schemas (``bench/contract_schemas.py``) for two baselines:

* ``jsonschema``: ``Draft202012Validator``, every error collected (``list(iter_errors(output))``),
  as our validator reports every violation;
* ``fastjsonschema``: the schema compiled to Python code (draft-07, the same keywords), which stops
  at the first error: the fastest pure-Python validator, not a like-for-like one.

The outputs (``bench/contract_corpus.py``) are generated, deterministic and labelled: 70 %
compliant, 30 % with 1-3 realistic mistakes. Measured on a mix over all contracts and on named
mid-size contracts (``memory_retrieval_ranking``, ``code_evolver``): outputs/s for compliant-only,
violating-only and the mix (best and median of ``--rounds`` passes, engines interleaved), per-output
latency (p50/p95/p99), compile time, and whether the three engines agree on valid/invalid for every
output.

When the contracts API is there (``POST /api/v1/contracts/audit``), an end-to-end phase serves it
with gunicorn as ``make run`` does and posts batches of ``--api-batch`` items with an operator key
(database ``governance_bench_contracts`` on the embedded PostgreSQL, or ``DATABASE_URL``).

Run: ``python -m bench contracts`` (or ``make bench BENCH_ARGS="contracts --rounds 5"``).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema
from fastjsonschema import JsonSchemaValueException

from bench.common import (
    BASE_DIR,
    SETTINGS,
    div,
    machine,
    package_version,
    percentile,
    prepare_database,
    publish,
    run_threads,
    until_interrupted,
)
from bench.contract_corpus import Sample, corpus
from bench.contract_schemas import CATALOG, DRAFT_07, DRAFT_2020_12, Contract, json_schema, load_catalog
from governance.contracts.codegen import compile_contract

DB_NAME = "governance_bench_contracts"
ENGINES = ("ours", "jsonschema", "fastjsonschema")
SUBSETS = ("compliant", "violating", "mix")
NAMED = ("memory_retrieval_ranking", "code_evolver")
WORKERS = 2
SAMPLES_KEPT = 5
_PR_SET_PDEATHSIG = 1

# Targets from the issues (18.3: generated code, at least fastjsonschema's pace and 15 times
# jsonschema's while reporting every violation); printed as met / missed, never a failure.
VS_JSONSCHEMA = 15.0
VS_FASTJSONSCHEMA = 1.0
OUTPUTS_PER_S = 100_000
# Ratios and targets use the best round: the work is CPU-bound and deterministic, so a slower round
# only measures a neighbour on the shared cores (timeit's advice); the median is reported beside it.
HEADLINE = "best"


@dataclass
class Config:
    size: int = 14_000  # outputs of the catalog mix (200 per contract on average)
    named: tuple[str, ...] = NAMED
    named_size: int = 5_000
    violating: float = 0.3
    seed: int = 1
    rounds: int = 7
    api: bool = True
    api_batch: int = 1000
    api_clients: int = 2
    api_duration: float = 20.0


# --- Engines -------------------------------------------------------------------------------------


@dataclass
class Engines:
    """One validator per contract and engine, and what building them cost."""

    ours: dict[str, Callable[..., Any]] = field(default_factory=dict)
    jsonschema: dict[str, Callable[[Any], Any]] = field(default_factory=dict)  # bound iter_errors
    fastjsonschema: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    compile_ms: dict[str, float] = field(default_factory=dict)
    schema_bytes: int = 0


def build_engines(contracts: list[Contract]) -> Engines:
    """Compile every contract three ways, timing each engine's compilation of the whole catalog
    (ours from FieldRules, the others from the generated schema documents)."""
    engines = Engines()
    schemas = {c.name: json_schema(c) for c in contracts}
    drafts7 = {c.name: json_schema(c, DRAFT_07) for c in contracts}
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    engines.schema_bytes = sum(len(json.dumps(s)) for s in schemas.values())
    started = time.perf_counter()
    engines.ours = {c.name: compile_contract(c.rules) for c in contracts}
    engines.compile_ms["ours"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    engines.jsonschema = {name: jsonschema.Draft202012Validator(s).iter_errors for name, s in schemas.items()}
    engines.compile_ms["jsonschema"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    engines.fastjsonschema = {name: fastjsonschema.compile(s) for name, s in drafts7.items()}
    engines.compile_ms["fastjsonschema"] = (time.perf_counter() - started) * 1000
    return engines


# The loops are written out per engine so the harness costs each the same (no wrapper call).


def loop_ours(pairs: Sequence[tuple[Callable, Any]]) -> None:
    for validate, output in pairs:
        validate(output)


def loop_jsonschema(pairs: Sequence[tuple[Callable, Any]]) -> None:
    for iter_errors, output in pairs:
        list(iter_errors(output))


def loop_fastjsonschema(pairs: Sequence[tuple[Callable, Any]]) -> None:
    for validate, output in pairs:
        try:  # noqa: SIM105 (contextlib.suppress would add a context manager per output)
            validate(output)
        except JsonSchemaValueException:
            pass


def each_ours(pairs: Sequence[tuple[Callable, Any]]) -> list[int]:
    clock, spent = time.perf_counter_ns, []
    for validate, output in pairs:
        started = clock()
        validate(output)
        spent.append(clock() - started)
    return spent


def each_jsonschema(pairs: Sequence[tuple[Callable, Any]]) -> list[int]:
    clock, spent = time.perf_counter_ns, []
    for iter_errors, output in pairs:
        started = clock()
        list(iter_errors(output))
        spent.append(clock() - started)
    return spent


def each_fastjsonschema(pairs: Sequence[tuple[Callable, Any]]) -> list[int]:
    clock, spent = time.perf_counter_ns, []
    for validate, output in pairs:
        started = clock()
        try:  # noqa: SIM105
            validate(output)
        except JsonSchemaValueException:
            pass
        spent.append(clock() - started)
    return spent


LOOPS = {"ours": loop_ours, "jsonschema": loop_jsonschema, "fastjsonschema": loop_fastjsonschema}
EACH = {"ours": each_ours, "jsonschema": each_jsonschema, "fastjsonschema": each_fastjsonschema}


def pairs_for(engines: Engines, engine: str, samples: list[Sample]) -> list[tuple[Callable, Any]]:
    validators = getattr(engines, engine)
    return [(validators[s.contract], s.output) for s in samples]


def rate(engine: str, pairs: list[tuple[Callable, Any]]) -> float:
    """Outputs per second of one pass. The garbage of the previous pass is collected first so it
    is not billed here; the collector stays on (a validator that allocates pays for it)."""
    gc.collect()
    started = time.perf_counter()
    LOOPS[engine](pairs)
    return len(pairs) / (time.perf_counter() - started)


# --- Measures ------------------------------------------------------------------------------------


def subsets(samples: list[Sample]) -> dict[str, list[Sample]]:
    return {
        "compliant": [s for s in samples if s.compliant],
        "violating": [s for s in samples if not s.compliant],
        "mix": samples,
    }


def throughput(engines: Engines, samples: list[Sample], rounds: int) -> dict[str, dict[str, dict[str, Any]]]:
    """Outputs/s per engine and subset: a warm-up pass each, then ``rounds`` passes with the engines
    interleaved inside every round, so a neighbour's load on the shared machine hits all three."""
    parts = subsets(samples)
    pairs = {e: {name: pairs_for(engines, e, part) for name, part in parts.items()} for e in ENGINES}
    for engine in ENGINES:
        LOOPS[engine](pairs[engine]["mix"])
    rates: dict[str, dict[str, list[float]]] = {e: {name: [] for name in SUBSETS} for e in ENGINES}
    for _ in range(rounds):
        for name in SUBSETS:
            for engine in ENGINES:
                rates[engine][name].append(rate(engine, pairs[engine][name]))
    return {
        engine: {
            name: {
                "outputs": len(parts[name]),
                "median": round(statistics.median(found)),
                "best": round(max(found)),
                "rounds": [round(r) for r in found],
            }
            for name, found in by_subset.items()
        }
        for engine, by_subset in rates.items()
    }


def latency(engines: Engines, samples: list[Sample]) -> dict[str, dict[str, dict[str, float]]]:
    """Per-output latency in microseconds (one timed call each, the clock read costs ~0.1 us)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for engine in ENGINES:
        gc.collect()
        spent = EACH[engine](pairs_for(engines, engine, samples))
        by_label = {
            "compliant": sorted(ns for ns, s in zip(spent, samples, strict=True) if s.compliant),
            "violating": sorted(ns for ns, s in zip(spent, samples, strict=True) if not s.compliant),
            "mix": sorted(spent),
        }
        out[engine] = {
            name: {f"p{p}": round(percentile(ordered, p) / 1000, 2) for p in (50, 95, 99)}
            for name, ordered in by_label.items()
        }
    return out


def _schema_path(error: jsonschema.ValidationError) -> str:
    path = ""
    for part in error.absolute_path:
        path = f"{path}[{part}]" if isinstance(part, int) else (f"{path}.{part}" if path else str(part))
    return path


def agreement(engines: Engines, samples: list[Sample]) -> tuple[dict[str, Any], list[bool]]:
    """Do the three engines say valid/invalid alike, and as the generator meant? A difference is
    explained only when our validator passed the output with warnings (what it only warns about,
    the schemas were built to allow); anything else is unexplained and printed. Also: does our
    validator report every injected mistake at its path (it claims to report every violation)?"""
    agree = explained = 0
    unexplained: list[dict[str, Any]] = []
    as_labelled = Counter()
    warned, warning_codes = 0, Counter()
    mistakes, found, missed = 0, 0, Counter()
    violations = Counter()
    verdicts = []
    for sample in samples:
        report = engines.ours[sample.contract](sample.output)
        errors = list(engines.jsonschema[sample.contract](sample.output))
        try:
            engines.fastjsonschema[sample.contract](sample.output)
            fast_ok = True
        except JsonSchemaValueException:
            fast_ok = False
        said = {"ours": report.compliant, "jsonschema": not errors, "fastjsonschema": fast_ok}
        verdicts.append(report.compliant)
        for engine, ok in said.items():
            as_labelled[engine] += ok == sample.compliant
        violations["ours"] += len(report.violations)
        violations["jsonschema"] += len(errors)
        if report.compliant and report.warnings:
            warned += 1
            warning_codes.update(str(w.code) for w in report.warnings)
        if len(set(said.values())) == 1:
            agree += 1
        elif report.compliant and report.warnings:
            explained += 1
        elif len(unexplained) < SAMPLES_KEPT:
            unexplained.append(
                {
                    "contract": sample.contract,
                    "generated_compliant": sample.compliant,
                    **said,
                    "mistakes": [m.__dict__ for m in sample.mistakes],
                    "output": sample.output,
                    "ours_violations": [v.as_dict() for v in report.violations],
                    "jsonschema_errors": [f"{_schema_path(e) or '$'}: {e.message}" for e in errors[:5]],
                }
            )
        paths = {v.path for v in report.violations}
        for mistake in sample.mistakes:
            mistakes += 1
            if mistake.path in paths:
                found += 1
            else:
                missed[f"{sample.contract}: {mistake.kind} at {mistake.path or '$'}"] += 1
    total = len(samples)
    disagree = total - agree
    return {
        "outputs": total,
        "all_three_agree": agree,
        "agreement_rate": round(agree / total, 6),
        "differences_explained": explained,
        "differences_unexplained": disagree - explained,
        "unexplained_samples": unexplained,
        "as_generated": {engine: round(as_labelled[engine] / total, 6) for engine in ENGINES},
        "compliant_with_warnings": warned,
        "warning_codes": dict(warning_codes.most_common()),
        "violations_reported": dict(violations),
        "mistakes_injected": mistakes,
        "mistakes_reported_by_ours": found,
        "mistakes_missed_by_ours": dict(missed.most_common(SAMPLES_KEPT)),
    }, verdicts


def mistake_mix(samples: list[Sample]) -> dict[str, Any]:
    kinds = Counter(m.kind for s in samples for m in s.mistakes)
    per_output = Counter(len(s.mistakes) for s in samples if s.mistakes)
    return {"kinds": dict(kinds.most_common()), "per_violating_output": dict(sorted(per_output.items()))}


def ratios(rates: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, float]]:
    ours = rates["ours"]
    return {
        name: {
            "ours_vs_jsonschema": div(ours[name][HEADLINE], rates["jsonschema"][name][HEADLINE]),
            "ours_vs_fastjsonschema": div(ours[name][HEADLINE], rates["fastjsonschema"][name][HEADLINE]),
            "median_ours_vs_jsonschema": div(ours[name]["median"], rates["jsonschema"][name]["median"]),
            "median_ours_vs_fastjsonschema": div(ours[name]["median"], rates["fastjsonschema"][name]["median"]),
        }
        for name in SUBSETS
    }


def measure_corpus(label: str, engines: Engines, samples: list[Sample], cfg: Config) -> dict[str, Any]:
    print(f"{label}: {len(samples)} outputs, agreement ...", flush=True)
    agreed, verdicts = agreement(engines, samples)
    print(f"{label}: throughput, {cfg.rounds} rounds x 3 subsets x 3 engines ...", flush=True)
    rates = throughput(engines, samples, cfg.rounds)
    print(f"{label}: latency ...", flush=True)
    return {
        "contracts": sorted({s.contract for s in samples}),
        "outputs": len(samples),
        "violating": sum(not s.compliant for s in samples),
        "mistakes": mistake_mix(samples),
        "mean_output_bytes": round(statistics.mean(len(json.dumps(s.output)) for s in samples)),
        "agreement": agreed,
        "throughput": rates,
        "latency_us": latency(engines, samples),
        "ratios": ratios(rates),
        "_verdicts": verdicts,
    }


# --- The API, end to end -------------------------------------------------------------------------


def api_available() -> bool:
    """The contracts router with its batch audit route, read rather than imported (Django is not
    set up yet, and the benchmark prepares a database only when there is something to serve)."""
    module = BASE_DIR / "governance" / "contracts_api.py"
    return module.exists() and '@router.post("/audit"' in module.read_text(encoding="utf-8")


def prepare_api_database() -> tuple[str, str]:
    """Migrate, import the shipped catalog (a no-op when it is already there) and issue an operator
    key to a user holding only ``governance.view_contract``; returns (plain key, database)."""
    where = prepare_database(DB_NAME)
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.db import connection

    from governance.contracts import services as contracts
    from governance.kernel.principals import SYSTEM
    from governance.kernel.services import issue_api_key

    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    user, _ = get_user_model().objects.get_or_create(username="bench-contracts")
    user.user_permissions.add(Permission.objects.get(content_type__app_label="governance", codename="view_contract"))
    _, key = issue_api_key(actor=SYSTEM, name="bench-contracts", user=user)
    connection.close()
    return key, where


def start_server(port: int, log: Path) -> subprocess.Popen:
    """gunicorn as ``make run`` starts it (as bench/jobs.py does), on this benchmark's database."""
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "controlplane.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(WORKERS),
        "--graceful-timeout",
        "10",
        "--no-control-socket",
    ]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "EMBEDDED_DB_NAME": DB_NAME, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        return subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the benchmark is killed outright (Linux), so no orphan stays."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Batch:
    body: bytes
    items: int
    compliant: int  # what our validator said in process: the server must say the same


def batches(samples: list[Sample], verdicts: list[bool], size: int) -> list[Batch]:
    out = []
    for start in range(0, len(samples) - size + 1, size):
        chunk = samples[start : start + size]
        items = [{"contract": s.contract, "output": s.output} for s in chunk]
        body = json.dumps({"items": items}, ensure_ascii=False).encode()
        out.append(Batch(body, len(chunk), sum(verdicts[start : start + size])))
    return out


@dataclass
class ApiTally:
    """What the client threads saw; only appends, which are atomic under the GIL (``+=`` is not)."""

    done: list[tuple[float, int]] = field(default_factory=list)  # (seconds, items) per correct batch
    errors: list[str] = field(default_factory=list)


def _post_batches(
    port: int, key: str, todo: list[Batch], offset: int, step: int, deadline: float, tally: ApiTally
) -> None:
    """One keep-alive client posting batches in turn (client ``offset`` of ``step``) until the deadline."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    index = offset
    try:
        while time.perf_counter() < deadline:
            batch = todo[index % len(todo)]
            index += step
            started = time.perf_counter()
            try:
                conn.request("POST", "/api/v1/contracts/audit", batch.body, headers)
                response = conn.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                tally.errors.append(repr(exc))
                continue
            elapsed = time.perf_counter() - started
            answer = json.loads(body) if response.status == 200 else {}
            if answer.get("total") == batch.items and answer.get("compliant") == batch.compliant:
                tally.done.append((elapsed, batch.items))
            else:
                summary = {k: answer.get(k) for k in ("total", "compliant")} if answer else body[:300]
                tally.errors.append(f"{response.status}: {summary} (expected {batch.compliant} compliant)")
    finally:
        conn.close()


def drive_api(port: int, key: str, todo: list[Batch], clients: int, seconds: float) -> dict[str, Any]:
    tally = ApiTally()
    started = time.perf_counter()
    threads = [
        threading.Thread(
            target=_post_batches, args=(port, key, todo, n, clients, started + seconds, tally), daemon=True
        )
        for n in range(clients)
    ]
    run_threads(threads)
    elapsed = time.perf_counter() - started
    ordered = sorted(seconds for seconds, _ in tally.done)
    items = sum(count for _, count in tally.done)
    return {
        "batches": len(ordered) + len(tally.errors),
        "errors": len(tally.errors),
        "items": items,
        "seconds": round(elapsed, 2),
        "items_per_s": round(items / elapsed, 1) if elapsed else 0.0,
        "batch_p50_ms": round(percentile(ordered, 50) * 1000, 1),
        "batch_p95_ms": round(percentile(ordered, 95) * 1000, 1),
        "error_samples": tally.errors[:SAMPLES_KEPT],
    }


def measure_api(samples: list[Sample], verdicts: list[bool], cfg: Config) -> tuple[dict[str, Any], str]:
    """The mix corpus in batches of ``api_batch`` through gunicorn: a warm-up batch per client that
    is not recorded, then ``api_duration`` seconds. Returns (result, where the database is)."""
    from bench.jobs import free_port, stop_embedded_db_if_ours, stop_server, wait_healthy

    todo = batches(samples, verdicts, cfg.api_batch)
    if not todo:
        raise SystemExit(f"--size {cfg.size} holds no batch of --api-batch {cfg.api_batch}")
    key, where = prepare_api_database()
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"bench-contracts-gunicorn-{port}.log"
    server = start_server(port, log)
    try:
        wait_healthy(server, port, log)
        print(
            f"api: gunicorn ({WORKERS} workers) on 127.0.0.1:{port}, {cfg.api_clients} clients, "
            f"batches of {cfg.api_batch}, {cfg.api_duration:g} s, log {log}",
            flush=True,
        )
        drive_api(port, key, todo, cfg.api_clients, 0.1)  # one batch per client: connections, caches
        result = drive_api(port, key, todo, cfg.api_clients, cfg.api_duration)
    finally:
        stop_server(server)
        stop_embedded_db_if_ours()
    result["request_bytes_mean"] = round(statistics.mean(len(b.body) for b in todo))
    return result, where


# --- Report --------------------------------------------------------------------------------------


def targets(result: dict[str, Any]) -> dict[str, bool]:
    found: dict[str, bool] = {}
    corpora = result["corpora"]
    for label, measured in corpora.items():
        for name in SUBSETS if label == "catalog" else ("mix",):
            ours = measured["throughput"]["ours"][name][HEADLINE]
            vs_js, vs_fast = (measured["ratios"][name][k] for k in ("ours_vs_jsonschema", "ours_vs_fastjsonschema"))
            where = f"{label} {name}: ours >="
            found[f"{where} {VS_JSONSCHEMA:g}x jsonschema ({vs_js:.2f}x)"] = vs_js >= VS_JSONSCHEMA
            found[f"{where} {VS_FASTJSONSCHEMA:g}x fastjsonschema ({vs_fast:.2f}x)"] = vs_fast >= VS_FASTJSONSCHEMA
            found[f"{where} {OUTPUTS_PER_S:,} outputs/s ({ours:,})"] = ours >= OUTPUTS_PER_S
    for label, measured in corpora.items():
        agreed = measured["agreement"]
        found[
            f"{label}: the three engines agree on every output but explained ones "
            f"({agreed['agreement_rate']:.2%} agree)"
        ] = agreed["differences_unexplained"] == 0
        found[
            f"{label}: ours reports every injected mistake at its path "
            f"({agreed['mistakes_reported_by_ours']}/{agreed['mistakes_injected']})"
        ] = agreed["mistakes_reported_by_ours"] == agreed["mistakes_injected"]
    return found


def report(result: dict[str, Any]) -> str:
    lines = []
    for label, m in result["corpora"].items():
        lines.append(
            f"\n{label}: {m['outputs']} outputs ({m['violating']} violating) over "
            f"{len(m['contracts'])} contract(s), mean {m['mean_output_bytes']} bytes of JSON"
        )
        lines.append(
            f"{'outputs/s (' + HEADLINE + ')':<20}"
            + "".join(f"{name:>14}" for name in SUBSETS)
            + f"{'p50 us':>10}{'p95 us':>10}{'p99 us':>10}"
        )
        for engine in ENGINES:
            rates = m["throughput"][engine]
            lat = m["latency_us"][engine]["mix"]
            lines.append(
                f"{engine:<20}"
                + "".join(f"{rates[name][HEADLINE]:>14,}" for name in SUBSETS)
                + f"{lat['p50']:>10.1f}{lat['p95']:>10.1f}{lat['p99']:>10.1f}"
            )
        medians = m["throughput"]["ours"]
        lines.append(f"{'(ours, median)':<20}" + "".join(f"{medians[name]['median']:>14,}" for name in SUBSETS))
        for key in ("ours_vs_jsonschema", "ours_vs_fastjsonschema"):
            lines.append(f"{key:<20}" + "".join(f"{m['ratios'][name][key]:>13.2f}x" for name in SUBSETS))
        a = m["agreement"]
        lines.append(
            f"agreement: {a['all_three_agree']}/{a['outputs']} ({a['agreement_rate']:.4%}); explained "
            f"{a['differences_explained']}, unexplained {a['differences_unexplained']}; compliant with warnings "
            f"only {a['compliant_with_warnings']}; ours reported {a['mistakes_reported_by_ours']}/"
            f"{a['mistakes_injected']} injected mistakes; violations reported: ours "
            f"{a['violations_reported'].get('ours', 0)}, jsonschema {a['violations_reported'].get('jsonschema', 0)}"
        )
        for sample in a["unexplained_samples"]:
            lines.append(f"unexplained difference: {json.dumps(sample, ensure_ascii=False)[:800]}")
    compile_ms = result["compile_ms"]
    lines.append("\ncompile the catalog (ms): " + ", ".join(f"{e} {compile_ms[e]:.1f}" for e in ENGINES))
    api = result["api"]
    if api.get("items_per_s") is not None:
        lines.append(
            f"api: POST /api/v1/contracts/audit, {api['batches']} batches of {result['config']['api_batch']} "
            f"({api['errors']} errors): {api['items_per_s']:,} items/s, batch p50 {api['batch_p50_ms']} ms, "
            f"p95 {api['batch_p95_ms']} ms; in-process ours/api {result['in_process_vs_api']}"
        )
        lines += [f"api error sample: {s}" for s in api["error_samples"]]
    else:
        lines.append(f"api: {api['status']}")
    box = result["machine"]
    lines.append(f"load average before/after: {box['loadavg_before'][0]} / {box['loadavg_after'][0]}")
    return "\n".join(lines) + "\n"


def run(cfg: Config | None = None) -> dict[str, Any]:
    """Generate, compile, measure in process, then the API when it exists; write the JSON."""
    cfg = cfg or Config()
    load_before = os.getloadavg()
    contracts = load_catalog(CATALOG)
    by_name = {c.name: c for c in contracts}
    unknown = [name for name in cfg.named if name not in by_name]
    if unknown:
        raise SystemExit(f"unknown contract(s): {', '.join(unknown)}")
    started = time.perf_counter()
    corpora_samples = {"catalog": corpus(contracts, cfg.size, cfg.violating, cfg.seed)}
    for number, name in enumerate(cfg.named, start=1):
        corpora_samples[name] = corpus([by_name[name]], cfg.named_size, cfg.violating, cfg.seed + number)
    generated_s = time.perf_counter() - started
    print(f"{len(contracts)} contracts; corpora generated in {generated_s:.1f} s", flush=True)
    engines = build_engines(contracts)
    corpora = {label: measure_corpus(label, engines, samples, cfg) for label, samples in corpora_samples.items()}
    verdicts = corpora["catalog"].pop("_verdicts")
    for measured in corpora.values():
        measured.pop("_verdicts", None)
    database = "none: in process"
    api: dict[str, Any] = {"status": "not measured: no POST /api/v1/contracts/audit in governance/contracts/api.py"}
    if cfg.api and api_available():
        api, database = measure_api(corpora_samples["catalog"], verdicts, cfg)
    elif not cfg.api:
        api = {"status": "skipped (--no-api)"}
    result: dict[str, Any] = {
        "benchmark": "contracts",
        "config": {
            **cfg.__dict__,
            "named": list(cfg.named),
            "catalog": str(CATALOG.relative_to(BASE_DIR)),
            "known_ids": None,
            "schema_drafts": {"jsonschema": DRAFT_2020_12, "fastjsonschema": DRAFT_07},
        },
        "machine": machine(
            database,
            load_before,
            jsonschema=package_version("jsonschema"),
            fastjsonschema=package_version("fastjsonschema"),
            referencing=package_version("referencing"),
            gunicorn=package_version("gunicorn"),
        ),
        "generated_s": round(generated_s, 1),
        "compile_ms": {engine: round(ms, 1) for engine, ms in engines.compile_ms.items()},
        "schema_bytes": engines.schema_bytes,
        "corpora": corpora,
        "api": api,
        "in_process_vs_api": div(
            corpora["catalog"]["throughput"]["ours"]["mix"][HEADLINE], api.get("items_per_s") or float("nan")
        ),
        "not_here": {
            "report_pages": "the contract report pages (governance/contracts/views.py: catalog, detail, fleet, agent "
            "reports) are not timed by this benchmark; the API phase fills the audit tables they read",
        },
    }
    result["targets"] = targets(result)
    return publish("contracts", result, report(result))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench contracts", description=__doc__.splitlines()[0])
    defaults = Config()
    parser.add_argument("--size", type=int, default=defaults.size, help="outputs over the whole catalog (14000)")
    parser.add_argument("--named", default=",".join(defaults.named), help="contracts measured alone, comma-separated")
    parser.add_argument("--named-size", type=int, default=defaults.named_size, help="outputs per named contract")
    parser.add_argument("--violating", type=float, default=defaults.violating, help="share of violating outputs")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="corpus seed (1)")
    parser.add_argument("--rounds", type=int, default=defaults.rounds, help="timed passes per engine and subset")
    parser.add_argument("--no-api", dest="api", action="store_false", help="skip the HTTP phase")
    parser.add_argument("--api-batch", type=int, default=defaults.api_batch, help="items per audit request")
    parser.add_argument("--api-clients", type=int, default=defaults.api_clients, help="concurrent HTTP clients")
    parser.add_argument("--api-duration", type=float, default=defaults.api_duration, help="seconds of the HTTP phase")
    args = parser.parse_args(argv)
    cfg = Config(
        size=args.size,
        named=tuple(n for n in args.named.split(",") if n),
        named_size=args.named_size,
        violating=args.violating,
        seed=args.seed,
        rounds=args.rounds,
        api=args.api,
        api_batch=args.api_batch,
        api_clients=args.api_clients,
        api_duration=args.api_duration,
    )
    return until_interrupted(lambda: run(cfg))


if __name__ == "__main__":
    sys.exit(main())
