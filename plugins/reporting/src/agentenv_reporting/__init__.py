"""agentenv-reporting: what agent-env reports about recorded runs: `agent-env runs list|show`
(the run documents and trial records, `summary.run_summary` for their counts), `agent-env runs
export` (every trial in an export format, to a file or pushed as a dataset) and `agent-env runs
compare` (two runs side by side: pass rates, their change with Newcombe's interval, the trials
that flipped; `compare.compare_runs` for other front ends)."""
