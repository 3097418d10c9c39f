"""A local stand-in for the Hugging Face Hub: repositories on disk (``store``) served over the
hub's HTTP API (``server``), for tests and the demo; huggingface_hub talks to it through
``HF_ENDPOINT``."""
