"""TFRecord files (RL Unplugged, RLDS): framed records with masked crc32c, and tf.train.Example.

Read without TensorFlow: the framing is checked here, the Example protobuf is parsed by the
``protobuf`` package from the public message definitions (``example.py``).
"""
