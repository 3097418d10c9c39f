"""Atari DQN Replay Dataset: Dopamine checkpoint files -> global row stream -> episodes."""
