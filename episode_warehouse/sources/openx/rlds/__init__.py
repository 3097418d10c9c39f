"""Open X-Embodiment as published: RLDS dataset folders (TFDS), read without TensorFlow."""
