"""GRPO on CPU with TRL, rollouts from agent-env's OpenEnv server, rewards from its verifiers.

The policy is a tiny causal LM built from a config (random weights) with a BPE tokenizer trained
here on the task prompts: nothing is downloaded from a hub. Every completion the trainer samples
is played as one episode of the served task through openenv's own client (reset the task, call
its `write` tool with the completion, `end_turn` with it as the answer), and the episode's reward
(the mean of the task's verifier scores) is the completion's reward.

    python train.py --url http://127.0.0.1:8000 [--steps 3] [--group 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

try:
    import torch
    from datasets import Dataset
    from openenv.core.generic_client import GenericEnvClient
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer
except ImportError as e:  # the example's own venv (README.md) has them; the project's does not
    sys.exit(f"train.py needs torch, transformers, trl, datasets and openenv ({e}); see README.md")

import httpx

SPECIAL = ["[PAD]", "[BOS]", "[EOS]", "[UNK]"]


def served_tasks(url: str) -> tuple[str, list[dict]]:
    """The served environment's name and its tasks (OpenEnv's task API)."""
    env_name = httpx.get(f"{url}/list_environments").json()[0]
    tasks = httpx.post(f"{url}/{env_name}/tasks", json={"split": "all"}).json()
    return env_name, tasks["tasks"] if isinstance(tasks, dict) else tasks


def build_tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on `texts` in well under a second."""
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        bos_token="[BOS]",
        eos_token="[EOS]",
        unk_token="[UNK]",
        padding_side="left",
    )


def build_model(tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    """A two-layer Llama with random weights."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)


def play(url: str, task: str, completion: str) -> tuple[float, dict]:
    """One episode of `task` with `completion` as the policy's line; its reward and metadata."""
    with GenericEnvClient(base_url=url, message_timeout_s=120).sync() as env:
        first = env.reset(task=task)
        if first.done:  # the task did not deploy: no reward, and say why
            return 0.0, dict(first.metadata or {})
        env.step({"type": "call_tool", "tool_name": "write", "arguments": {"text": completion}})
        last = env.step(
            {"type": "call_tool", "tool_name": "end_turn", "arguments": {"response": completion}}
        )
        return float(last.reward or 0.0), dict(last.metadata or {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="agent-env openenv serve")
    parser.add_argument("--steps", type=int, default=3, help="training steps")
    parser.add_argument("--group", type=int, default=4, help="completions per prompt (GRPO group)")
    parser.add_argument("--max-tokens", type=int, default=12, help="tokens per completion")
    args = parser.parse_args()

    env_name, tasks = served_tasks(args.url)
    print(f"served environment {env_name!r}: tasks {[t['name'] for t in tasks]}")
    tokenizer = build_tokenizer([t["prompt"] for t in tasks] + [t["system_prompt"] or "" for t in tasks])
    model = build_model(tokenizer)
    print(f"model: {sum(p.numel() for p in model.parameters())} parameters (random), vocab {len(tokenizer)}")
    rows = [{"prompt": t["prompt"], "task": t["name"]} for t in tasks] * (args.steps * 2)
    episodes: list[dict] = []

    def episode_reward(prompts, completions, task, **_) -> list[float]:
        """TRL reward function: one episode on the OpenEnv server per completion, in parallel."""
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(completions)) as pool:
            played = list(pool.map(lambda tc: play(args.url, *tc), zip(task, completions)))
        took = time.perf_counter() - started
        for (reward, meta), text in zip(played, completions):
            episodes.append({"reward": reward, "completion": text, "scores": meta.get("scores"),
                             "status": meta.get("status"), "instance_id": meta.get("instance_id")})
        rewards = [reward for reward, _ in played]
        print(f"  {len(completions)} episodes in {took:.1f}s, rewards {rewards}", flush=True)
        return rewards

    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="train-grpo-"),
        per_device_train_batch_size=args.group,
        num_generations=args.group,
        max_completion_length=args.max_tokens,
        max_steps=args.steps,
        learning_rate=5e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=episode_reward,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    started = time.perf_counter()
    trainer.train()
    took = time.perf_counter() - started
    print(f"\n{trainer.state.global_step} GRPO steps in {took:.1f}s on CPU; {len(episodes)} episodes")
    for log in trainer.state.log_history:
        if "reward" in log:
            print(
                f"step {log['step']}: loss {log.get('loss', 0.0):.4f}  reward mean {log['reward']:.3f}"
                f"  std {log.get('reward_std', 0.0):.3f}"
            )
    ok = [e for e in episodes if e["status"] != "error"]
    print(f"episodes scored by the verifiers: {len(ok)}/{len(episodes)}; "
          f"mean reward {statistics.mean(e['reward'] for e in episodes):.3f}")
    print("one episode:", json.dumps(episodes[-1]))


if __name__ == "__main__":
    main()
