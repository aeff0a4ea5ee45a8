"""One run of an experiment: what this machine and the images offer (host_facts), the plan made from them
(runplan.py: pure), the bundle written from the plan, services, every step in order (a duet: a repetition's two
steps at once, duet.py), the machine record before and after. Ctrl-C or a kill leaves a bundle marked partial, which
`pirex run --resume BUNDLE` finishes."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import platform as pyplatform
import secrets
import shlex
import socket
import struct
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack, nullcontext
from pathlib import Path

from pirex import __version__
from pirex.core import cpuset, experiment, machine, preflight, proc
from pirex.core.bundle import PARTIAL, Bundle, RunInfo, write_step_info
from pirex.core.errors import PirexError
from pirex.core.paths import git_version
from pirex.images import localregistry, sources
from pirex.images import platforms as plat
from pirex.runner import deployment, duet, faults, host, leftovers, lock, native, outputs, runplan, tracing, variants
from pirex.runner.container import ContainerSpec, run_labels
from pirex.runner.runplan import Options

log = logging.getLogger(__name__)

STEP_TIMEOUT = 6 * 3600


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
    spec = ContainerSpec(
        image["reference"], ("java", "-XshowSettings:properties", "-version"), rm=True, platform=image["platform"]
    )
    r = proc.run(spec.argv(), timeout=300, check=False)
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
        spec = ContainerSpec(
            self.image_ref, tuple(self.argv), detach=True, rm=True, name=self.name, labels=run_labels(), network="host"
        )
        proc.run(spec.argv(), timeout=120)

        def ready() -> str | None:
            logs = proc.run(["docker", "logs", self.name], timeout=30, check=False)
            if self.spec.ready_line in logs.stdout + logs.stderr:
                return "ready"
            return None if logs.ok else "gone"

        if proc.wait_until(ready, 120, 0.5) == "ready":
            return self
        self.__exit__()
        raise PirexError(f"service {self.spec.name} did not print {self.spec.ready_line!r} within 120 s")

    def __exit__(self, *exc):
        proc.run(["docker", "rm", "-f", self.name], timeout=120, check=False)


def run(opts: Options, later: runplan.Continuation | None = None) -> Path:
    """One run into a new bundle (`later`: a later bundle of one plan, runplan.Continuation); returns its path."""
    opts.results_dir = Path(opts.results_dir).absolute()  # docker -v takes a relative path for a volume name
    faults.check_results_dir(opts.results_dir)
    with lock.measuring(opts.allow_concurrent):  # one measuring run per host
        return _run(opts, later)


def _run(opts: Options, later: runplan.Continuation | None) -> Path:
    exp = experiment.load(opts.experiment)
    runplan.check(exp, opts)  # the arguments, before any image is looked for
    if opts.seed is None:
        opts = dataclasses.replace(opts, seed=secrets.randbits(32))
    facts = host_facts(exp, opts)
    p = runplan.plan_run(exp, opts, facts, checked=True, later=later)
    _announce(p)
    if p.preflight_failed and not opts.force:
        raise PirexError("preflight failed (see above; `pirex doctor` says how to fix it, --force runs anyway)")
    tool = {"version": __version__, "commit": git_version()[1]}
    bundle = Bundle.create(
        opts.results_dir,
        p.experiment,
        p.profile,
        p.parameters,
        list(p.variants),
        p.steps,
        p.images,
        tool,
        design=p.design,
    )
    log.info("bundle %s", bundle.path)
    bundle.write_run_info({**p.run_info, **({"work_dir": str(opts.work_dir)} if opts.work_dir else {})})
    bundle.write_machine(before=facts.machine)
    with leftovers.Owner(bundle.run_id, bundle.path):  # what the run starts, recorded before it starts
        return _execute(bundle, exp)


def host_facts(exp: experiment.Experiment, opts: Options) -> runplan.HostFacts:
    """What planning the run needs from this machine, the images and Docker, gathered once: the images (looked up,
    pulled or imported), whether the matrix's optional part is in the image, what each case can do here, tracing,
    free ports for services, and the machine record taken before the run."""
    platform = plat.parse(opts.platform) if opts.platform else plat.host()
    matrix = runplan.matrix_of(exp, opts.matrix)
    asked = runplan.requested(exp, opts)
    images = {name: image_for(name, opts.tag, platform) for name in exp.images}
    arch = pyplatform.machine()
    trace_unavailable = None
    if (functions := runplan.trace_functions(exp, opts.trace, arch)) is not None:
        with tracing.mounted():
            trace_unavailable = tracing.unavailable_reason(exp.tracing.tracer, functions)
    opts.results_dir.mkdir(parents=True, exist_ok=True)
    peers = [asked[s.remote] for s in exp.services if s.remote and asked.get(s.remote)]  # a service elsewhere
    return runplan.HostFacts(
        platform=platform,
        host_platform=plat.host(),
        native_unavailable=native.unavailable_reason(),
        online_cpus=frozenset(host.online_cpus()),
        machine=machine.record(opts.work_dir or opts.results_dir, peers=peers or None),
        images=images,
        jvm=_jvm(exp, images),
        fallback=bool(matrix and matrix.fallback and _lacks_optional_part(matrix, images[exp.image])),
        cases=_case_facts(matrix) if matrix else {},
        arch=arch,
        trace_unavailable=trace_unavailable,
        free_ports={s.port: deployment.free_port("0.0.0.0") for s in exp.services if s.port},
        siblings=duet.siblings() if opts.design == "duet" else {},
    )


def _announce(p: runplan.RunPlan) -> None:
    """What the plan leaves out or changes, said before the run starts."""
    for name, why in p.skipped.items():
        log.warning("skipping %s: %s", name, why)
    if p.matrix and p.matrix.get("fallback"):
        log.warning("%s", p.matrix["fallback"]["reason"])
    if p.trace and not p.trace["enabled"]:
        log.warning("--trace: tracing is skipped: %s", p.trace["reason"])
    if p.platform != plat.host():
        log.warning("running %s under emulation: these numbers show function, not performance", p.platform)
    for f in p.preflight:
        if f.level != "ok":
            log.warning("preflight %s: %s", f.check, f.message)


def _jvm(exp: experiment.Experiment, images: dict[str, dict]) -> dict | None:
    """The JVM that ran: the image's, or that of the first role of a deployment that has one."""
    for name in (*(exp.deployment.images if exp.deployment else ()), exp.image):
        if found := jvm_of(images[name]):
            return found
    return None


def _lacks_optional_part(matrix: experiment.Matrix, image: dict) -> bool:
    """Whether the image lacks a matrix's optional part (SPASS-meter, bring-your-own): its probe fails."""
    spec = ContainerSpec(image["reference"], tuple(matrix.fallback["probe"]), rm=True, platform=image["platform"])
    probe = proc.run(spec.argv(), timeout=300, check=False)
    return not probe.ok


def _case_facts(matrix: experiment.Matrix) -> dict[str, runplan.CaseFacts]:
    """What this machine makes of every case of the matrix: whether it can run, and what to note."""
    out = {}
    for case in matrix.cases:
        resolved, base = matrix.resolved(case.name), host.base_of(matrix, case.name)
        notes = host.notes(resolved, base=base)
        out[case.name] = runplan.CaseFacts(
            host.unavailable_reason(resolved, base=base), notes.lines, notes.same_as_base
        )
    return out


def resume(path: Path, allow_concurrent: bool = False) -> Path:
    if kind := Bundle.open(Path(path)).run_info().deployment:
        raise PirexError(f"{path} is a run of `pirex {kind}`: one step, not resumed; run `pirex {kind}` again")
    with lock.measuring(allow_concurrent):
        bundle = Bundle.resume(Path(path).absolute())  # as in run(): docker -v needs absolute paths
        try:
            leftovers.reap_run(bundle.run_id, bundle.path)  # what the killed run left, gone before it continues
            exp = experiment.load(bundle.experiment)
            _recheck(bundle, exp)
        except BaseException:
            bundle.close()
            raise
        with leftovers.Owner(bundle.run_id, bundle.path):
            return _execute(bundle, exp)


def _recheck(bundle: Bundle, exp: experiment.Experiment) -> None:
    """A resumed run may be on a changed machine: what it still has to do must still be possible."""
    info = bundle.run_info()
    problems = []
    if info.matrix:
        m = exp.matrices[info.matrix]
        for name in sorted({s.variant for s in _todo(bundle)}):
            if why := host.unavailable_reason(m.resolved(name), base=host.base_of(m, name)):
                problems.append(f"case {name}: {why}")
    if info.trace.get("enabled"):
        with tracing.mounted():
            if why := tracing.unavailable_reason(info.trace["tracer"], info.trace["functions"]):
                problems.append(f"tracing: {why}")
    if any(experiment.aa_base(v) == "native" for v in bundle.variants) and (why := native.unavailable_reason()):
        problems.append(f"native: {why}")
    if bundle.design == "duet":
        wanted = {c for s in _todo(bundle) for c in cpuset.parse_cpus(s.cpus)}
        if missing := sorted(wanted - host.online_cpus()):
            problems.append(f"the duet's CPUs {missing} are not online here (online: {sorted(host.online_cpus())})")
    if problems:
        raise PirexError(f"cannot resume {bundle.path} here: " + "; ".join(problems))


def _todo(bundle: Bundle) -> list[runplan.Step]:
    """The planned steps the bundle has still to run, in plan order."""
    return [runplan.Step.of(s) for s in bundle.remaining_steps()]


def _duet_repetition(
    bundle: Bundle,
    exp: experiment.Experiment,
    group: list[runplan.Step],
    by_name: dict[str, variants.Variant],
    gateway: str,
    workdir_host: Path,
) -> str:
    """One repetition of a duet: its steps at the same moment, each on its own CPUs (duet.run_together); recorded
    together, with each step's CPUs, start and end, or not at all. Returns what it ran, said."""
    image = bundle.images[exp.image]
    rep = group[0].repetition
    kinds = Counter(by_name[s.variant].executor.kind for s in group)
    with bundle.steps_together([s.key for s in group]) as dirs:
        jobs, prepare = {}, {}
        for s in group:
            name = s.variant
            v = dataclasses.replace(by_name[name], cpus=s.cpus)
            c = f"pirex-{bundle.run_id}-{name}-{rep}"
            # before the sides start: a native side's export (shared), what each side needs of its own
            executor, prepare[name] = v.executor.beside(kinds[v.executor.kind], image, workdir_host, name, c)
            v = executor.variant
            argv = experiment.render(
                exp.command, runplan.step_values(exp, s.params or bundle.parameters, v, rep, gateway)
            )
            jobs[name] = lambda v=v, argv=argv, out=dirs[s.key], w=workdir_host / name, c=c: variants.run_step(
                v, image["reference"], argv, out, w, STEP_TIMEOUT, c, image["platform"]
            )
        irq = machine.interrupts()
        outcomes = duet.run_together(jobs, failed=lambda r: r.returncode != 0, prepare=prepare)
        irq_after = machine.interrupts()
        for s in sorted(group, key=lambda s: _blame(outcomes[s.variant])):  # the side that failed speaks first
            _duet_side(bundle, exp, s, outcomes[s.variant], dirs[s.key], irq, irq_after)
    return f"duet repetition {rep}: {_sides(bundle, group)}"


def _blame(o: duet.Outcome) -> int:
    """0: the side failed by itself; 1: it was stopped (because the other failed, or from outside); 2: it ran."""
    if o.interrupted:
        return 1
    return 0 if o.error or o.value.returncode != 0 else 2


def _ran_text(argv) -> str:
    """What pirex ran, for a step's error: natively the command in the exported tree without the image's entrypoint,
    in Docker through it (docs/experiments.md), so that a usage error names the argv that got it."""
    return f"pirex ran: {shlex.join(map(str, argv))[:1500]}"


def _duet_side(
    bundle: Bundle,
    exp: experiment.Experiment,
    step: runplan.Step,
    o: duet.Outcome,
    out: Path,
    irq: dict,
    irq_after: dict,
) -> None:
    """One side's step as the interleaved design records it (step.json, interrupts.json, its outputs checked),
    with its CPUs and times in the manifest; PirexError (the repetition is not recorded) when it failed."""
    if o.interrupted:
        raise KeyboardInterrupt(f"the duet's {step.variant} side was stopped ({o.message or o.error})")
    if o.error:
        raise PirexError(f"{step} (duet): {o.message or o.error}")
    # the machine's interrupts during both sides; the repetition's records count only once every side's are made
    _record_step(exp, out, o.value, irq, irq_after, str(step), f" (duet, on CPUs {step.cpus})")
    bundle.record(step.variant, step.repetition, cpus=step.cpus, start=o.start, end=o.end)


def _record_step(
    exp: experiment.Experiment,
    out: Path,
    r: variants.StepRun,
    irq: dict | None,
    irq_after: dict | None,
    what: str,
    how: str = "",
    exit_codes: Sequence[int] = (0,),
) -> None:
    """The one place a step is recorded, whichever design ran it: interrupts.json and step.json into its folder, then
    its checks (an exit code among `exit_codes`, the experiment's outputs there); PirexError naming the step (`what`,
    "native repetition 3", and `how` it ran) and the argv where either fails."""
    machine.write_interrupts(out / "interrupts.json", irq, irq_after)
    write_step_info(out, r.argv, r.returncode, r.seconds)
    if r.returncode not in exit_codes:
        tail = (out / "stderr.txt").read_text()[-2000:] if (out / "stderr.txt").exists() else ""
        raise PirexError(f"{what}{how} exited {r.returncode}:\n{tail}\n{_ran_text(r.argv)}")
    if problem := outputs.problem(exp.outputs, out):
        raise PirexError(f"{what}: {problem}")


def _sides(bundle: Bundle, group: list[runplan.Step]) -> str:
    """`native on CPU 0 12.3 s, docker on CPU 1 12.5 s` for a completed duet repetition."""
    done = {(s["variant"], s["repetition"]): s for s in bundle.completed}
    parts = []
    for s in group:
        c = done[s.key]
        parts.append(f"{s.variant} on CPU {c['cpus']} {c['end'] - c['start']:.1f} s")
    return ", ".join(parts)


def _execute(bundle: Bundle, exp: experiment.Experiment) -> Path:
    """Every step the bundle still has to run, as its manifest and run.json planned it (also when resumed)."""
    images = bundle.images
    image = images[exp.image]
    params = bundle.parameters  # the run's, for its services; each step runs with its own from the plan
    info = bundle.run_info()
    by_name = runplan.variants_of(exp, bundle.variants, info.matrix, info.runs_as, info.cpus)
    trace = info.trace
    if trace.get("enabled"):  # the workload writes markers into tracefs: give containers the same one
        by_name = {
            n: dataclasses.replace(v, docker_args=[*v.docker_args, "-v", f"{tracing.TRACEFS}:{tracing.TRACEFS}"])
            for n, v in by_name.items()
        }
    gateway = bridge_gateway()
    workdir_host = bundle.path.parent / f".{bundle.run_id}-work"
    if info.work_dir:  # --work-dir: every variant's /work on that storage device, the work removed after
        workdir_host = info.work_dir / f".pirex-{bundle.run_id}-work"
        by_name = {n: dataclasses.replace(v, bind_workdir=True) for n, v in by_name.items()}
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
            _run_steps(bundle, exp, info, by_name, site, gateway, workdir_host)
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM/SIGHUP through the CLI's handler
        faults.settle(bundle, PARTIAL)
        print(f"interrupted: {bundle.path} is partial; `pirex run --resume {bundle.path}` finishes it")
        raise
    except Exception as e:  # PirexError, or a bug: the bundle says failed either way, never left "running"
        faults.settle(bundle, "failed")
        fault = faults.explained(e, bundle)  # a full disk, the Docker daemon gone: what to do
        if bundle.kept_failed and fault is e and isinstance(e, PirexError):  # a step's own failure: where to look
            kept = ", ".join(str(d) for d in bundle.kept_failed)
            fault = PirexError(f"{e}\nthe failed step's folder (stdout, stderr, step.json): {kept}")
        e = fault
        if not isinstance(e, PirexError):
            log.error("the run failed unexpectedly; %s is marked failed", bundle.path)
        raise e
    return _finish(bundle)


def _run_steps(
    bundle: Bundle,
    exp: experiment.Experiment,
    info: RunInfo,
    by_name: dict[str, variants.Variant],
    site: deployment.Servers | None,
    gateway: str,
    workdir_host: Path,
) -> None:
    """The one run loop: the steps the bundle still has to run, a group at a time (runplan.groups: a duet's repetition
    side by side, otherwise one step alone), each recorded by _record_step, the time left said."""
    together = bundle.design == "duet"
    m = exp.matrices[info.matrix] if info.matrix else None
    todo = runplan.groups(_todo(bundle), together)
    started = time.monotonic()
    for i, group in enumerate(todo, 1):
        if together:
            said = _duet_repetition(bundle, exp, group, by_name, gateway, workdir_host)
        else:
            said = _alone(bundle, exp, info, m, group[0], by_name[group[0].variant], site, gateway, workdir_host)
        eta = (time.monotonic() - started) / i * (len(todo) - i)
        print(f"[{i}/{len(todo)}] {said}" + (f", about {eta / 60:.1f} min left" if i < len(todo) else ""), flush=True)


def _alone(
    bundle: Bundle,
    exp: experiment.Experiment,
    info: RunInfo,
    m: experiment.Matrix | None,
    step: runplan.Step,
    v: variants.Variant,
    site: deployment.Servers | None,
    gateway: str,
    workdir_host: Path,
) -> str:
    """One step in its bundle folder (every design's but a duet's): the matrix case's host settings, tracing and the
    deployment's servers around it, its outputs checked. Returns what it ran, said."""
    image = bundle.images[exp.image]
    trace, soak = info.trace, info.soak
    values = runplan.step_values(exp, step.params or bundle.parameters, v, step.repetition, gateway)
    case = m.resolved(v.name) if m else None
    with (
        bundle.step(*step.key) as out,
        host.applied(case) if case else nullcontext(),
        tracing.traced(trace["tracer"], trace["functions"], out / trace["output"])
        if trace.get("enabled")
        else nullcontext(),
        site.deployed(v, out) if site else nullcontext({}) as served,
    ):
        argv = experiment.render(exp.command, {**values, **served}) + soak.get("driver_args", [])
        name = f"pirex-{bundle.run_id}-{v.name}-{step.repetition}"
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
        _record_step(exp, out, r, irq, machine.interrupts(), str(step), exit_codes=soak.get("exit_codes", [0]))
    return f"{step}: {r.seconds:.1f} s"


def _finish(bundle: Bundle) -> Path:
    """The machine record after the run, what changed during it said, the bundle closed (complete when every planned
    step is done)."""
    after = machine.record(bundle.path)
    bundle.write_machine(after=after)
    for f in preflight.compare(bundle.machine_before(), after):
        if f.level != "ok":
            log.warning("during the run, %s: %s", f.check, f.message)
    final = bundle.finish(PARTIAL)  # complete when every planned step is done
    print(f"{final}: {bundle.path}")
    return bundle.path
