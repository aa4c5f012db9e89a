"""The Hugging Face Trainer on a tiny BERT built from its config (nothing downloaded). The
model is built before the Trainer seeds, unless --model-init hands the Trainer a function."""
import sys
import tempfile

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                    max_position_embeddings=16, num_labels=2)


class Tiny(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return {"input_ids": torch.tensor([(i * 7 + j) % 50 for j in range(8)]), "labels": torch.tensor(i % 2)}


def build():
    return BertForSequenceClassification(config)


if __name__ == "__main__":
    init = "--model-init" in sys.argv
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(out, max_steps=3, per_device_train_batch_size=4, report_to=[], save_strategy="no",
                                 logging_strategy="no", use_cpu=True, seed=11, dataloader_num_workers=0)
        trainer = Trainer(model=None if init else build(), model_init=build if init else None, args=args,
                          train_dataset=Tiny())
        trainer.train()
