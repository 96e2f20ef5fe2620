"""Real Lightning (lightning 2.x) runs of a small MLP classifier on synthetic data, CPU.

Modes (--mode):
  healthy    normal training, a few epochs, progress bar with loss, finishes with
             `Trainer.fit` stopped: `max_epochs=N` reached
  nan        SGD with a huge learning rate: train_loss in the progress bar / logged metrics
             rises then turns nan; the run continues to the end
  nan_stop   same, with EarlyStopping(monitor="train_loss", check_finite=True): Lightning
             stops the run itself with "Monitored metric train_loss = nan is not finite"
  anomaly    same, with Trainer(detect_anomaly=True): backward raises
             "Function '...Backward0' returned nan values"
  save_full  healthy training, ModelCheckpoint writes into --ckpt-dir, which the driver
             puts on a tiny, already full tmpfs: the save fails with ENOSPC

Run: python corpus/generate/lightning_run.py --mode healthy
"""
import argparse
import tempfile

import lightning as L
import torch
import torch.nn as nn
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, RichProgressBar, TQDMProgressBar
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True, choices=["healthy", "nan", "nan_stop", "anomaly", "save_full"])
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--lr", type=float, default=None)
p.add_argument("--seed", type=int, default=7)
p.add_argument("--ckpt-dir", default=None, help="checkpoint dir (save_full: a directory on a full filesystem)")
p.add_argument("--rich", action="store_true", help="RichProgressBar instead of the tqdm one")
args = p.parse_args()
L.seed_everything(args.seed)

n = 4096
X = torch.randn(n, 20) * 4
w = torch.randn(20, 5)
Y = (X @ w + torch.randn(n, 5)).argmax(1)


class Classifier(L.LightningModule):
    def __init__(self, lr, sgd):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 5))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log("val_loss", nn.functional.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        if self.hparams.sgd:
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=100)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


bad = args.mode in ("nan", "nan_stop", "anomaly")
lr = args.lr if args.lr is not None else (3.0 if bad else 3e-3)
model = Classifier(lr=lr, sgd=bad)
train = DataLoader(TensorDataset(X[:3584], Y[:3584]), batch_size=64, shuffle=True)
val = DataLoader(TensorDataset(X[3584:], Y[3584:]), batch_size=256)
callbacks = [RichProgressBar() if args.rich else TQDMProgressBar(refresh_rate=10)]
ckpt_dir = args.ckpt_dir or tempfile.mkdtemp(prefix="lightning_ckpt_")
if args.mode == "nan_stop":
    callbacks.append(EarlyStopping(monitor="train_loss", check_finite=True, patience=1000,
                                   check_on_train_epoch_end=True, verbose=True))
if args.mode in ("save_full", "healthy"):
    callbacks.append(ModelCheckpoint(dirpath=ckpt_dir, filename="last", save_top_k=1, monitor="val_loss"))
trainer = L.Trainer(
    accelerator="cpu",
    devices=1,
    max_epochs=args.epochs,
    log_every_n_steps=10,
    callbacks=callbacks,
    detect_anomaly=args.mode == "anomaly",
    logger=L.pytorch.loggers.CSVLogger(tempfile.mkdtemp(prefix="lightning_logs_")),
    enable_checkpointing=args.mode in ("save_full", "healthy"),
)
trainer.fit(model, train, val)
print("metrics:", {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()})
