"""The `hf://` bundle source: bundles published in Hugging Face Hub dataset repos."""
