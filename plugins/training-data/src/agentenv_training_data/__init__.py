"""agentenv-training-data: a run's trials as training data. `chat` turns a trial's stored
trajectories into an OpenAI chat conversation with tool calls and tool results; `rows` builds
one training row per trial (conversation, task, seed, per-verifier scores, reward, failure
class, timings, costs, per-step rewards); `formats` writes the rows as JSON lines or Parquet."""
