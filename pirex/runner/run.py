"""One run of an experiment: image, preflight, plan, bundle, services, every step in order, the
machine record before and after. Ctrl-C or a kill leaves a bundle marked partial, which
`pirex run --resume BUNDLE` finishes."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import platform as pyplatform
import re
import secrets
import socket
import struct
import time
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path

from pirex import __version__, experiment, machine, pmu, preflight, proc
from pirex import params as P
from pirex.bundle import PARTIAL, Bundle
from pirex.errors import PirexError
from pirex.images import localregistry, sources
from pirex.images import platforms as plat
from pirex.paths import git_version
from pirex.runner import deployment, faults, host, leftovers, lock, native, outputs, plan, tracing, variants

log = logging.getLogger(__name__)

STEP_TIMEOUT = 6 * 3600
WORKDIR = "/work"


@dataclass
class Options:
    experiment: str
    profile: str = "quick"
    variants: str | None = None
    order: str = "interleaved"
    seed: int | None = None
    results_dir: Path = Path("results")
    tag: str = "dev"
    overrides: dict | None = None  # typed values (experiment.overrides parses --set), checked again here
    force: bool = False
    platform: str | None = None  # another platform than this machine's runs under QEMU: function, not timing
    matrix: str | None = None  # run a matrix's cases (e.g. moobench fluctuation) instead of the variants
    trace: bool = False  # ftrace around each step, as the experiment declares (fork)
    soak: str | None = None  # a deployment's driver holds the load this long (Locust --run-time, e.g. 10m)
    allow_concurrent: bool = False  # run even while another measuring run holds this host (lock.py)
    precision: float | None = None  # --precision: the ratio's relative half-width a two-stage run aims at
    confidence: float = 0.95
    budget: float | None = None  # seconds
    cases: tuple[str, ...] | None = None  # with matrix: only these of its cases (all when None)
    cpus: str | None = None  # --cpus: every step of every variant pinned to these CPUs (taskset, --cpuset-cpus)


def _chosen_cases(matrix, names: tuple[str, ...] | None) -> set[str]:
    known = [c.name for c in matrix.cases]
    if not names:
        return set(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise PirexError(f"--cases {','.join(unknown)}: the {matrix.name} matrix has the cases {', '.join(known)}")
    return set(names)


def image_for(name: str, tag: str, platform: plat.Platform) -> dict:
    """One platform of an image, in the engine, pinned by digest: built here, else published
    (imported or pulled by registry.yaml's digest); the origin says which."""
    with localregistry.local_registry():
        src = sources.resolve(name, tag, platform)
    info = json.loads(proc.run(["docker", "image", "inspect", src.reference], timeout=60).stdout)[0]
    return {
        "name": name,
        "reference": src.reference,
        "digest": src.reference.split("@", 1)[1],
        "image_id": info["Id"],
        "platform": str(platform),
        "env": info["Config"].get("Env") or [],
        "origin": src.origin,
    }


def jvm_of(image: dict) -> dict | None:
    """The JVM the image runs (vendor, VM, version), as `java -XshowSettings:properties` reports it."""
    r = proc.run(
        [
            "docker",
            "run",
            "--rm",
            "--platform",
            image["platform"],
            image["reference"],
            "java",
            "-XshowSettings:properties",
            "-version",
        ],
        timeout=300,
        check=False,
    )
    props = {k.strip(): v.strip() for k, _, v in (ln.partition(" = ") for ln in r.stderr.splitlines() if " = " in ln)}
    keys = ("java.vendor", "java.vm.name", "java.vm.version", "java.runtime.version", "os.arch")
    return {k: props.get(k) for k in keys} if r.ok else None


def bridge_gateway() -> str:
    """The host's address on Docker's default bridge, where containers reach host services."""
    info = json.loads(proc.run(["docker", "network", "inspect", "bridge"], timeout=60).stdout)[0]
    for cfg in info.get("IPAM", {}).get("Config") or []:
        if cfg.get("Gateway"):
            return cfg["Gateway"]
    # Older engines leave Gateway out: the bridge device's own address (SIOCGIFADDR: no `ip` program
    # needed, which a minimal Raspberry Pi OS or Debian install may lack)
    dev = info.get("Options", {}).get("com.docker.network.bridge.name", "docker0")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", dev[:15].encode()))
        except OSError as e:
            raise PirexError(f"cannot tell the host's address on Docker's bridge ({dev}): {e.strerror}") from None
    return socket.inet_ntoa(packed[20:24])


class Service:
    """A helper process of the experiment (B6's sink) in its own container on the host network,
    the same for every variant; stopped on every exit path. An experiment declares it, with the
    parameters that receive its port and that name another machine running it instead."""

    def __init__(self, spec: experiment.Service, image_ref: str, params: dict, name: str):
        self.spec, self.image_ref, self.name = spec, image_ref, name
        self.argv = experiment.render(spec.command, params)

    def __enter__(self):
        leftovers.note("container", name=self.name)
        proc.run(
            [
                "docker",
                "run",
                "-d",
                "--rm",
                "--name",
                self.name,
                *leftovers.docker_args(),
                "--network",
                "host",
                self.image_ref,
                *self.argv,
            ],
            timeout=120,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            logs = proc.run(["docker", "logs", self.name], timeout=30, check=False)
            if self.spec.ready_line in logs.stdout + logs.stderr:
                return self
            if not logs.ok:
                break
            time.sleep(0.5)
        self.__exit__()
        raise PirexError(f"service {self.spec.name} did not print {self.spec.ready_line!r} within 120 s")

    def __exit__(self, *exc):
        proc.run(["docker", "rm", "-f", self.name], timeout=120, check=False)


def run(opts: Options) -> Path:
    opts.results_dir = Path(opts.results_dir).absolute()  # docker -v takes a relative path for a volume name
    faults.check_results_dir(opts.results_dir)
    with lock.measuring(opts.allow_concurrent):  # one measuring run per host
        return _run(opts)


def _run(opts: Options) -> Path:
    exp = experiment.load(opts.experiment)
    if opts.order not in plan.ORDERS:
        raise PirexError(f"--order {opts.order!r}: expected one of {', '.join(plan.ORDERS)}")
    platform = plat.parse(opts.platform) if opts.platform else plat.host()
    matrix = _matrix(exp, opts.matrix)
    cpus = _checked_cpus(opts.cpus, exp, matrix)
    if matrix:
        base = opts.variants or matrix.runs_as
        if base not in ("native", "docker"):
            raise PirexError(f"--matrix {matrix.name} runs its cases on one variant: --variants native or docker")
        chosen = (base,)
    else:
        if opts.cases:
            raise PirexError("--cases chooses among a matrix's cases: give --matrix too")
        chosen = exp.pick_variants(opts.variants)
    skipped = {}
    for name in (v for v in chosen if experiment.aa_base(v) == "native"):  # native and its A/A copy
        if platform != plat.host():
            skipped[name] = f"native runs this machine's platform only ({plat.host()}), not {platform}"
        elif why := native.unavailable_reason():
            skipped[name] = why
            log.warning("skipping the %s variant: %s", name, why)
    runnable = tuple(v for v in chosen if v not in skipped)
    if not runnable:
        raise PirexError("no variant left to run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))

    overrides = P.check_values(exp.declared, opts.overrides or {}, "--set")
    params = {**exp.resolve(opts.profile), **(matrix.parameters_for(opts.profile) if matrix else {}), **overrides}
    requested = dict(params)  # before what the runner resolves here (free ports, PMU events): what reuse compares
    _service_ports(exp, params)
    seed = opts.seed if opts.seed is not None else secrets.randbits(32)

    soak = _soak(exp, opts.soak, params)  # the arguments are checked before any image is looked for
    images = {name: image_for(name, opts.tag, platform) for name in exp.images}
    image = images[exp.image]
    matrix_info: dict = {}
    if matrix:
        matrix_info = {"name": matrix.name, "source": matrix.source, "runs_as": runnable[0], "notes": {}}
        fallback = _fallback(matrix, image)
        if fallback:
            params.update({**(fallback.get("parameters") or {}), **overrides})
            matrix_info["fallback"] = fallback
        wanted = _chosen_cases(matrix, opts.cases)
        cases = []
        for case in (c for c in matrix.cases if c.name in wanted):
            resolved, base = matrix.resolved(case.name), host.base_of(matrix, case.name)
            why = host.unavailable_reason(resolved, base=base)
            if fallback and case.name in (fallback.get("skip_cases") or []):
                why = fallback["reason"]
            if why:
                skipped[case.name] = why
                log.warning("skipping case %s: %s", case.name, why)
                continue
            if notes := host.notes(resolved, base=base):
                matrix_info["notes"][case.name] = notes
            cases.append(case.name)
        runnable = tuple(cases)
        if not runnable:
            raise PirexError(
                "no case of the matrix can run here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items())
            )
    trace = _trace_plan(exp, opts.trace)
    if trace and trace.get("enabled"):  # the workload writes markers into tracefs's trace_marker
        params[exp.tracing.marker_parameter] = str(tracing.TRACEFS / "trace_marker")
    by_name = _variants(exp, runnable, matrix_info, cpus)
    # every step with its resolved parameters, so that the manifest alone says what ran (a matrix
    # case's own changes included: depth 1 for the depth-1 case)
    steps = [
        {**s, "params": {**params, **by_name[s["variant"]].parameters}}
        for s in plan.make(runnable, int(params["repetitions"]), opts.order, seed)
    ]

    if platform != plat.host():
        log.warning("running %s under emulation: these numbers show function, not performance", platform)
    opts.results_dir.mkdir(parents=True, exist_ok=True)
    peers = [params[s.remote] for s in exp.services if s.remote and params.get(s.remote)]  # a service elsewhere
    before = machine.record(opts.results_dir, peers=peers or None)
    params = pmu.resolve(params, before)  # raw_events: auto -> this CPU's raw PMU event codes (or none)
    for s in steps:  # the manifest's plan says what each step ran, resolved
        s["params"] = {**params, **by_name[s["variant"]].parameters}
    findings = preflight.check(
        before,
        min_free_disk_bytes=exp.needs.get("disk_mb", 0) << 20,
        min_free_mem_bytes=exp.needs.get("memory_mb", 0) << 20,
        io_heavy=bool(exp.needs.get("io_heavy")),
    )
    for f in findings:
        if f.level != "ok":
            log.warning("preflight %s: %s", f.check, f.message)
    if preflight.worst(findings) == "fail" and not opts.force:
        raise PirexError("preflight failed (see above; `pirex doctor` says how to fix it, --force runs anyway)")

    bundle = Bundle.create(
        opts.results_dir,
        exp.id,
        opts.profile,
        params,
        list(runnable),
        steps,
        images,
        {"version": __version__, "commit": git_version()[1]},
    )
    log.info("bundle %s", bundle.path)
    (bundle.path / "run.json").write_text(
        json.dumps(
            {
                "order": opts.order,
                "seed": seed,
                "skipped_variants": skipped,
                "matrix": matrix_info or None,
                "trace": trace,
                "cpus": cpus,
                "variants": {v.name: v.describe() for v in by_name.values()},
                "jvm": _jvm(exp, images),
                "soak": soak,
                "preflight": [f.to_dict() for f in findings],
                "requested": requested,
            },
            indent=2,
        )
        + "\n"
    )
    bundle.write_machine(before=before)
    with leftovers.Owner(bundle.run_id, bundle.path):  # what the run starts, recorded before it starts
        return _execute(bundle, exp, images, params)


def _jvm(exp: experiment.Experiment, images: dict[str, dict]) -> dict | None:
    """The JVM that ran: the image's, or that of the first role of a deployment that has one."""
    for name in (*(exp.deployment.images if exp.deployment else ()), exp.image):
        if found := jvm_of(images[name]):
            return found
    return None


def _service_ports(exp: experiment.Experiment, params: dict) -> None:
    """A service started here on port 0 gets a free port of this host; one on another machine
    (its `remote` parameter set) needs its port given."""
    for s in exp.services:
        remote = bool(s.remote and params.get(s.remote))
        if s.port and not params.get(s.port):
            if remote:
                raise PirexError(
                    f"--set {s.remote}={params[s.remote]} runs {s.name} on that machine: give its port "
                    f"too (--set {s.port}=PORT)"
                )
            params[s.port] = deployment.free_port("0.0.0.0")


def _soak(exp: experiment.Experiment, duration: str | None, params: dict) -> dict | None:
    """--soak: the driver sends requests until the duration is over, as the experiment declares
    (experiment.yaml: soak), while the service's heap and RSS are sampled."""
    if not duration:
        return None
    if not exp.soak:
        with_soak = [e for e in experiment.available() if experiment.load(e).soak]
        raise PirexError(
            f"--soak holds a service under load; {exp.id} declares no soak "
            f"(experiments that do: {', '.join(with_soak) or 'none'})"
        )
    if not re.fullmatch(r"(\d+[hms])+", duration):
        raise PirexError(f"--soak {duration!r}: expected a duration like 10m, 90s or 1h30m")
    params.update(exp.soak.set)
    return {
        "duration": duration,
        "driver_args": experiment.render(exp.soak.args, {"duration": duration}),
        "exit_codes": list(exp.soak.exit_codes),
        "why": exp.soak.why,
    }


def resume(path: Path, allow_concurrent: bool = False) -> Path:
    with lock.measuring(allow_concurrent):
        bundle = Bundle.resume(Path(path).absolute())  # as in run(): docker -v needs absolute paths
        try:
            leftovers.reap_run(bundle.run_id, bundle.path)  # what the killed run left, gone before it continues
            exp = experiment.load(bundle.manifest["experiment"])
            _recheck(bundle, exp)
        except BaseException:
            bundle.close()
            raise
        with leftovers.Owner(bundle.run_id, bundle.path):
            return _execute(bundle, exp, bundle.manifest["images"], bundle.manifest["parameters"])


def _recheck(bundle: Bundle, exp: experiment.Experiment) -> None:
    """A resumed run may be on a changed machine: what it still has to do must still be possible."""
    run_info = json.loads((bundle.path / "run.json").read_text())
    matrix_info = run_info.get("matrix") or {}
    problems = []
    if matrix_info:
        for name in sorted({s["variant"] for s in bundle.remaining_steps()}):
            m = exp.matrices[matrix_info["name"]]
            if why := host.unavailable_reason(m.resolved(name), base=host.base_of(m, name)):
                problems.append(f"case {name}: {why}")
    trace = run_info.get("trace") or {}
    if trace.get("enabled"):
        with tracing.mounted():
            if why := tracing.unavailable_reason(trace["tracer"], trace["functions"]):
                problems.append(f"tracing: {why}")
    if any(experiment.aa_base(v) == "native" for v in bundle.manifest["variants"]) and (
        why := native.unavailable_reason()
    ):
        problems.append(f"native: {why}")
    if problems:
        raise PirexError(f"cannot resume {bundle.path} here: " + "; ".join(problems))


def _trace_plan(exp: experiment.Experiment, wanted: bool) -> dict | None:
    """Whether the run traces, with what, or why not (recorded in run.json)."""
    if not wanted:
        return None
    if not exp.tracing:
        raise PirexError(f"{exp.id} declares no tracing (experiments/{exp.id}/experiment.yaml: tracing)")
    functions = list(exp.tracing.functions.get(pyplatform.machine(), ()))
    with tracing.mounted():
        why = tracing.unavailable_reason(exp.tracing.tracer, functions)
    if why:
        log.warning("--trace: tracing is skipped: %s", why)
        return {"enabled": False, "reason": why}
    return {"enabled": True, "tracer": exp.tracing.tracer, "functions": functions, "output": exp.tracing.output}


def _matrix(exp: experiment.Experiment, name: str | None) -> experiment.Matrix | None:
    if not name:
        return None
    if name not in exp.matrices:
        offered = ", ".join(exp.matrices) or "none"
        raise PirexError(f"{exp.id} has no matrix {name!r} (matrices: {offered})")
    return exp.matrices[name]


def _fallback(matrix: experiment.Matrix, image: dict) -> dict | None:
    """A matrix's optional part missing from the image (SPASS-meter, bring-your-own): what stands in."""
    fb = matrix.fallback
    if not fb:
        return None
    probe = proc.run(
        ["docker", "run", "--rm", "--platform", image["platform"], image["reference"], *fb["probe"]],
        timeout=300,
        check=False,
    )
    if probe.ok:
        return None
    log.warning("%s", fb["reason"])
    return {"reason": fb["reason"], "parameters": fb.get("parameters") or {}, "skip_cases": fb.get("skip_cases") or []}


def _checked_cpus(text: str | None, exp: experiment.Experiment, matrix: experiment.Matrix | None) -> str | None:
    """--cpus as a CPU list this process may run on, or None; refused with a matrix, whose cases
    declare their own CPUs (its base must keep every CPU for the two-cores case to mean anything),
    and for a deployment, whose servers and driver are not steps of one variant."""
    if text is None:
        return None
    text = text.strip()
    if not re.fullmatch(experiment.CPU_LIST, text):
        raise PirexError(f"--cpus {text!r}: expected a CPU list such as 1 or 0-1 or 0,2")
    if missing := host.offline_cpus(text):
        raise PirexError(f"--cpus {text}: CPUs {missing} are not online here (online: {sorted(host.online_cpus())})")
    if matrix:
        raise PirexError(f"--cpus pins every variant alike; the matrix {matrix.name} declares its cases' CPUs itself")
    if exp.deployment:
        raise PirexError(f"--cpus pins a step's process; {exp.id} deploys servers and a driver, which it does not pin")
    return text


def _variants(
    exp: experiment.Experiment, names: tuple[str, ...], matrix_info: dict, cpus: str | None = None
) -> dict[str, variants.Variant]:
    """The bundle's variant names -> how each runs: a variant, or a matrix case on one, with the
    experiment's privileges; every variant pinned to `cpus` (--cpus) when given."""
    if not matrix_info:
        return {n: dataclasses.replace(variants.by_name(n).with_privileges(exp.privileges), cpus=cpus) for n in names}
    m = exp.matrices[matrix_info["name"]]
    base = variants.by_name(matrix_info["runs_as"]).with_privileges(exp.privileges)
    return {n: base.for_case(m.resolved(n)) for n in names}


def _case_of(exp: experiment.Experiment, v: variants.Variant, matrix_info: dict) -> experiment.Case | None:
    return exp.matrices[matrix_info["name"]].resolved(v.name) if matrix_info else None


def _execute(bundle: Bundle, exp: experiment.Experiment, images: dict[str, dict], params: dict) -> Path:
    image = images[exp.image]
    todo = bundle.remaining_steps()
    run_info = json.loads((bundle.path / "run.json").read_text())  # how this run was planned, also when resumed
    matrix_info = run_info.get("matrix") or {}
    by_name = _variants(exp, tuple(bundle.manifest["variants"]), matrix_info, run_info.get("cpus"))
    trace = run_info.get("trace") or {}
    if trace.get("enabled"):  # the workload writes markers into tracefs: give containers the same one
        by_name = {
            n: dataclasses.replace(v, docker_args=[*v.docker_args, "-v", f"{tracing.TRACEFS}:{tracing.TRACEFS}"])
            for n, v in by_name.items()
        }
    gateway = bridge_gateway()
    workdir_host = bundle.path.parent / f".{bundle.run_id}-work"
    try:
        with ExitStack() as stack:  # tracefs, services and the work directory go on every exit path
            stack.callback(proc.run, ["rm", "-rf", workdir_host], timeout=300, check=False)
            if trace.get("enabled"):
                stack.enter_context(tracing.mounted())
            for s in exp.services:
                if not (s.remote and params.get(s.remote)):  # else it runs on the machine named there
                    stack.enter_context(Service(s, image["reference"], params, f"pirex-{bundle.run_id}-{s.name}"))
            site = None
            if exp.deployment:  # the database and the service, started per step; the table loaded once
                site = stack.enter_context(
                    deployment.Servers(exp.deployment, images, params, bundle, workdir_host, by_name)
                )
            soak = run_info.get("soak") or {}
            started = time.monotonic()
            for i, step in enumerate(todo, 1):
                v = by_name[step["variant"]]
                values = {**params, **v.parameters}
                for s in exp.services:  # a service on this host: where this variant reaches it
                    if s.remote and not values.get(s.remote):
                        values[s.remote] = v.host_address(gateway)
                values.update(output="/results", workdir=WORKDIR, variant=v.name, repetition=step["repetition"])
                case = _case_of(exp, v, matrix_info)
                with (
                    bundle.step(v.name, step["repetition"]) as out,
                    host.applied(case) if case else nullcontext(),
                    tracing.traced(trace["tracer"], trace["functions"], out / trace["output"])
                    if trace.get("enabled")
                    else nullcontext(),
                    site.deployed(v, out) if site else nullcontext({}) as served,
                ):
                    argv = experiment.render(exp.command, {**values, **served}) + soak.get("driver_args", [])
                    name = f"pirex-{bundle.run_id}-{v.name}-{step['repetition']}"
                    irq = machine.interrupts()  # ICPE'18 Figure 3: interrupts during each step
                    r = variants.run_step(
                        deployment.DRIVER if site else v,
                        image["reference"],
                        argv,
                        out,
                        workdir_host,
                        STEP_TIMEOUT,
                        name,
                        image["platform"],
                    )
                    machine.write_interrupts(out / "interrupts.json", irq, machine.interrupts())
                    (out / "step.json").write_text(
                        json.dumps(
                            {"argv": r.argv, "returncode": r.returncode, "seconds": round(r.seconds, 3)}, indent=2
                        )
                        + "\n"
                    )
                    if r.returncode not in soak.get("exit_codes", [0]):
                        tail = (out / "stderr.txt").read_text()[-2000:]
                        raise PirexError(f"{v.name} repetition {step['repetition']} exited {r.returncode}:\n{tail}")
                    if problem := outputs.problem(exp.outputs, out):
                        raise PirexError(f"{v.name} repetition {step['repetition']}: {problem}")
                eta = (time.monotonic() - started) / i * (len(todo) - i)
                print(
                    f"[{i}/{len(todo)}] {v.name} repetition {step['repetition']}: {r.seconds:.1f} s"
                    + (f", about {eta / 60:.1f} min left" if i < len(todo) else ""),
                    flush=True,
                )
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM/SIGHUP through the CLI's handler
        faults.settle(bundle, PARTIAL)
        print(f"interrupted: {bundle.path} is partial; `pirex run --resume {bundle.path}` finishes it")
        raise
    except Exception as e:  # PirexError, or a bug: the bundle says failed either way, never left "running"
        faults.settle(bundle, "failed")
        e = faults.explained(e, bundle)  # a full disk, the Docker daemon gone: what to do
        if not isinstance(e, PirexError):
            log.error("the run failed unexpectedly; %s is marked failed", bundle.path)
        raise e
    after = machine.record(bundle.path)
    bundle.write_machine(after=after)
    before = json.loads((bundle.path / "machine.json").read_text())["before"]
    for f in preflight.compare(before, after):
        if f.level != "ok":
            log.warning("during the run, %s: %s", f.check, f.message)
    final = bundle.finish(PARTIAL)  # complete when every planned step is done
    print(f"{final}: {bundle.path}")
    return bundle.path
