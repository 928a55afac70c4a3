"""GRPO on CPU with TRL, rollouts from agent-env's OpenEnv server, rewards from its verifiers.

The policy is a tiny causal LM built from a config (random weights) with a word-level tokenizer
built here from the task prompts: nothing is downloaded from a hub. Every completion the trainer
samples is played as one episode of the served task through openenv's own client (reset the task, call
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
import warnings
from concurrent.futures import ThreadPoolExecutor

try:
    import torch
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer
except ImportError as e:  # the example's own venv (README.md) has them; the project's does not
    sys.exit(f"train.py needs torch, transformers, trl, datasets and openenv ({e}); see README.md")

from episodes import play, served_tasks

SPECIAL = ["[PAD]", "[BOS]", "[EOS]", "[UNK]"]
FILLER = ["I", "it", "is", "to", "do", "so", "go", "up", "my", "on", "in", "of", "no", "yes", "ok"]


def build_tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the words of `texts` plus a few fillers, so a random policy's
    lines name the notes and the scratchpad (what the verifiers look for) only some of the time."""
    words = sorted({w.strip(".,'") for t in texts for w in t.split()} | set(FILLER) - {""})
    vocab = {token: i for i, token in enumerate([*SPECIAL, *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="agent-env openenv serve")
    parser.add_argument("--steps", type=int, default=3, help="training steps")
    parser.add_argument("--group", type=int, default=4, help="completions per prompt (GRPO group)")
    parser.add_argument("--max-tokens", type=int, default=12, help="tokens per completion")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' renamed options

    env_name, tasks = served_tasks(args.url)
    print(f"served environment {env_name!r}: tasks {[t['name'] for t in tasks]}")
    tokenizer = build_tokenizer(
        [t["prompt"] for t in tasks] + [t["system_prompt"] or "" for t in tasks]
    )
    model = build_model(tokenizer)
    print(
        f"model: {sum(p.numel() for p in model.parameters())} parameters (random), vocab {len(tokenizer)}"
    )
    rows = [{"prompt": t["prompt"], "task": t["name"]} for t in tasks] * (args.steps * 2)
    episodes: list[dict] = []

    def episode_reward(prompts, completions, task, **_) -> list[float]:
        """TRL reward function: one episode on the OpenEnv server per completion, in parallel."""
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(completions)) as pool:
            played = list(
                pool.map(lambda tc: play(args.url, *tc), zip(task, completions, strict=True))
            )
        took = time.perf_counter() - started
        for (reward, meta), text in zip(played, completions, strict=True):
            episodes.append(
                {
                    "reward": reward,
                    "completion": text,
                    "scores": meta.get("scores"),
                    "status": meta.get("status"),
                    "instance_id": meta.get("instance_id"),
                }
            )
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
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=episode_reward,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    trainer.remove_callback(PrinterCallback)  # the summary below says what matters
    started = time.perf_counter()
    trainer.train()
    took = time.perf_counter() - started
    print(
        f"\n{trainer.state.global_step} GRPO steps in {took:.1f}s on CPU; {len(episodes)} episodes"
    )
    for log in trainer.state.log_history:
        if "reward" in log:
            print(
                f"step {log['step']}: reward mean {float(log['reward']):.3f} "
                f"std {float(log['reward_std']):.3f}  loss {float(log['loss']):.2e}  "
                f"grad norm {float(log['grad_norm']):.3f}"
            )
    ok = [e for e in episodes if e["status"] != "error"]
    print(
        f"episodes scored by the verifiers: {len(ok)}/{len(episodes)}; "
        f"mean reward {statistics.mean(e['reward'] for e in episodes):.3f}"
    )
    for episode in episodes[-args.group :]:
        print("episode:", json.dumps(episode))


if __name__ == "__main__":
    main()
