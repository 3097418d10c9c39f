"""Run in lerobot-train's side environment (scripts/side_env.sh lerobot-train), with
lerobot-train's own arguments: build the training dataset as lerobot-train builds it
(``make_train_eval_datasets`` of the parsed ``TrainPipelineConfig``) and print the first batch
of a DataLoader over it (indices and ``observation.state``) as one JSON line. Imports lerobot
only: this file never runs in the project's environment."""

import json

import torch
from lerobot.configs import parser
from lerobot.configs.train import TrainPipelineConfig
from lerobot.datasets.factory import make_train_eval_datasets
from lerobot.policies import make_policy  # noqa: F401 - registers the policy types, as lerobot-train
from lerobot.utils.collate import lerobot_collate_fn


@parser.wrap()
def main(cfg: TrainPipelineConfig) -> None:
    cfg.validate()
    dataset, _ = make_train_eval_datasets(cfg)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=cfg.batch_size, shuffle=False, collate_fn=lerobot_collate_fn
    )
    batch = next(iter(loader))
    print(
        json.dumps(
            {
                "index": batch["index"].tolist(),
                "state": batch["observation.state"].tolist(),
                "action": batch["action"].tolist(),
            }
        )
    )


if __name__ == "__main__":
    main()
