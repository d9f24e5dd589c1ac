"""A tool-call loop: parallel calls, capped or streamed output, a time-out, a denial, a grant."""
import asyncio
import sys

import sbx

WORKSPACE, OUTSIDE = sys.argv[1], sys.argv[2]
box = sbx.Sbx()
policy = {"version": 1, "preset": "workspace-write"}


def for_model(r: sbx.CompletedRun) -> str:
    """What goes back to the model: the output (capped), how it ended, why sbx refused."""
    lines = [(r.stdout or "") + (r.stderr or "")] + (["[output truncated]"] if r.truncated else [])
    kind, err = r.report.get("error_kind"), r.report.get("error")
    lines += ["[timed out]" if kind == "timed_out" else f"[sbx: {err}]"] * bool(kind or err)
    denial = r.report.get("denial") or {"likely_sandbox_denial": False}
    lines += [f"[the sandbox refused: {denial['evidence']}]"] * denial["likely_sandbox_denial"]
    lines += [f"[network refused: {n}]" for n in r.report.get("network_refusals", [])]
    return "\n".join(lines + [f"[exit {r.returncode}]"])


def tool(argv, timeout=20.0):
    return box.run_async(policy, argv, cwd=WORKSPACE, timeout=timeout, max_output_bytes=256,
                         text=True)


def streamed(argv, cap: int) -> str:  # output as it comes, up to `cap`; then the sandbox ends
    text = ""
    with box.popen(policy, argv, stdout=sbx.PIPE, cwd=WORKSPACE, text=True) as child:
        while len(text) < cap and (line := child.stdout.readline()):
            text += line
        child.cancel()
    return text[:cap]


async def main() -> None:
    global policy
    calls = await asyncio.gather(
        tool(["sh", "-c", "echo built > out.txt && cat out.txt"]),
        tool(["sh", "-c", "yes | head -c 100000"]),
        tool(["sleep", "30"], timeout=0.3),
        tool(["sh", "-c", f"echo hello > {OUTSIDE}/note.txt"]),
        asyncio.to_thread(streamed, ["sh", "-c", "while :; do echo tick; sleep 0.05; done"], 20))
    for name, r in zip(["build", "chatty", "slow", "write"], calls):
        print(f"--- {name}\n{for_model(r)}")
    print(f"--- streamed\n{calls[4]}")
    denial = calls[3].report.get("denial") or {}
    if calls[3].returncode != 0 and denial.get("likely_sandbox_denial"):
        ask = {"version": 1, "filesystem": {"entries": [{"path": OUTSIDE, "access": "write"}]}}
        approval = box.approve(ask, ask)  # the person grants what was asked
        if approval["recorded"] and approval["policy"]:
            policy = box.widen(policy, approval["policy"])
        again = await tool(["sh", "-c", f"echo hello > {OUTSIDE}/note.txt"])
        print(f"--- write, granted {OUTSIDE}\n{for_model(again)}")
    box.close()


asyncio.run(main())
