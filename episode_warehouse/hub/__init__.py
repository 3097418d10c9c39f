"""The Hugging Face Hub as a blob store: ``hf://datasets[/OWNER/NAME[@REVISION]]`` URLs
(``url``), the calls huggingface_hub makes with our errors and retries (``client``), and the
store the shared mirror reads (``store``)."""
