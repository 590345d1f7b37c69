"""``paperlab forecast``: train a forecasting backbone with a chosen loss, and inspect its spectral bias.

- ``paperlab forecast train --model dlinear --data ETTh1 --horizon 96 --loss frele --out DIR`` trains through
  ``paperlab.train`` (early stopping on validation MSE), writes ``DIR/model.pt`` and ``DIR/metrics.json``
  (test MSE/MAE, standardised and in original units, band errors, per-epoch band history).
- ``paperlab forecast bias DIR`` reloads that model and writes the band table (``bias.md``) and plots.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
from pathlib import Path

from paperlab.cli._argparse import ArgumentParser

__all__ = ["add_parser"]


def _cmd_train(args: argparse.Namespace) -> int:
    import torch

    from paperlab.experiments.frele.bench import load_data
    from paperlab.io import atomic_write_bytes, atomic_write_json
    from paperlab.losses.spectral import SpectralBiasTracker, spectral_band_errors
    from paperlab.models.forecast import build_forecaster
    from paperlab.models.forecast_train import (
        DEFAULT_LR,
        ForecastTrainConfig,
        evaluate_forecaster,
        fit_forecaster,
        predict,
    )

    torch.set_num_threads(args.threads)
    data, generated = load_data(args.data, args.horizon)
    if generated and not args.allow_generated:
        raise SystemExit(f"data file for {args.data!r} not found (set PAPERLAB_DATA); pass --allow-generated to "
                         "train on a generated seasonal series instead")
    print(data.describe() + (" [GENERATED series]" if generated else ""))
    config = ForecastTrainConfig(epochs=args.epochs, batch_size=args.batch_size,
                                 lr=args.lr if args.lr is not None else DEFAULT_LR[args.model])
    model = build_forecaster(args.model, lookback=data.lookback, horizon=data.horizon, channels=data.channels,
                             seed=args.seed)
    tracker = SpectralBiasTracker(*data.windows("val", torch.arange(min(512, data.n_windows("val")))))
    fit = fit_forecaster(model, data, loss=args.loss, config=config, seed=args.seed, tracker=tracker,
                         progress=not args.no_progress)
    pred, target = predict(model, data, "test")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()  # serialized in memory, then renamed into place: a crash never leaves half a model.pt
    torch.save(model.state_dict(), buf)
    atomic_write_bytes(out / "model.pt", buf.getvalue())
    metrics = {"model": args.model, "data": args.data, "generated_data": generated, "lookback": data.lookback,
               "horizon": data.horizon, "channels": data.channels, "loss": args.loss, "seed": args.seed,
               "config": dataclasses.asdict(config), "epochs_run": fit.epochs_run, "best_val": fit.best,
               "test": evaluate_forecaster(model, data, "test"),
               "test_inverse": evaluate_forecaster(model, data, "test", inverse=True),
               "test_bands": spectral_band_errors(pred, target),
               "band_history": [{k: v for k, v in h.items() if k != "per_bin"} for h in tracker.history],
               "per_bin_history": tracker.heatmap().tolist()}
    atomic_write_json(out / "metrics.json", metrics)
    print(json.dumps({k: metrics[k] for k in ("test", "test_inverse", "test_bands", "epochs_run")}))
    return 0


def _cmd_bias(args: argparse.Namespace) -> int:
    import torch

    from paperlab.experiments.frele import plots as fp
    from paperlab.experiments.frele.bench import load_data
    from paperlab.io import atomic_write_text
    from paperlab.losses.spectral import spectral_band_errors
    from paperlab.models.forecast import build_forecaster
    from paperlab.models.forecast_train import predict
    from paperlab.tables import markdown_table

    torch.set_num_threads(args.threads)
    run = Path(args.dir)
    meta = json.loads((run / "metrics.json").read_text())
    data, generated = load_data(meta["data"], meta["horizon"], lookback=meta["lookback"])
    if generated != meta["generated_data"]:
        raise SystemExit(f"the model in {run} was trained on {'generated' if meta['generated_data'] else 'file'} "
                         f"data for {meta['data']!r} but this run found {'generated' if generated else 'file'} "
                         "data: set PAPERLAB_DATA as when training")
    model = build_forecaster(meta["model"], lookback=meta["lookback"], horizon=meta["horizon"],
                             channels=meta["channels"])
    model.load_state_dict(torch.load(run / "model.pt", weights_only=True))
    pred, target = predict(model, data, "test")
    rows = [{"metric": m, **spectral_band_errors(pred, target, metric=m)} for m in ("rmse", "amplitude", "relative")]
    label = f"{meta['model']}+{meta['loss']}"
    figs = [fp.plot_spectrum_overlay(target, {label: pred}, run, "bias_spectrum")]
    if meta.get("band_history"):
        figs.append(fp.plot_band_curves({label: meta["band_history"]}, run, "bias_band_curves"))
        figs.append(fp.plot_heatmaps({label: torch.tensor(meta["per_bin_history"])}, run, "bias_heatmap"))
    text = (f"# spectral bias of {label} on {meta['data']} (H {meta['horizon']})\n\n" + markdown_table(rows) + "\n"
            + "\n".join(f"![{f}]({f})" for f in figs) + "\n")
    atomic_write_text(run / "bias.md", text)
    print(markdown_table(rows))
    print(f"wrote {run / 'bias.md'} and {', '.join(figs)}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``paperlab forecast {train,bias}``."""
    p = sub.add_parser("forecast", help="train forecasters with FreLE and other losses; spectral-bias tables",
                       description="Long-term forecasting with frequency losses (FreLE, arXiv 2510.25800).")
    fsub = p.add_subparsers(dest="forecast_command", required=True, parser_class=ArgumentParser)
    t = fsub.add_parser("train", help="train one backbone with one loss and save it")
    t.add_argument("--model", default="dlinear", choices=["dlinear", "rlinear", "patchtst", "itransformer"],
                   help="forecasting backbone")
    t.add_argument("--data", default="ETTh1", help="ETTh1, ETTh2, ETTm1, ETTm2, weather, exchange_rate, "
                   "national_illness")
    t.add_argument("--horizon", type=int, default=96, help="forecast horizon H (steps)")
    t.add_argument("--loss", default="frele", choices=["mse", "mae", "fredf", "efr", "frele", "frele_ortho",
                                                       "frele_amp", "frele_mse"], help="training loss")
    t.add_argument("--out", type=Path, required=True, help="output folder")
    t.add_argument("--epochs", type=int, default=10, help="maximum epochs (early stopping on validation)")
    t.add_argument("--batch-size", type=int, default=32, help="windows per batch")
    t.add_argument("--lr", type=float, default=None, help="default: the backbone's recipe lr")
    t.add_argument("--seed", type=int, default=2021, help="seed of the model init and the batch order")
    t.add_argument("--threads", type=int, default=1, help="torch threads")
    t.add_argument("--allow-generated", action="store_true", help="train on generated data if the file is absent")
    t.add_argument("--no-progress", action="store_true", help="hide progress bars")
    t.set_defaults(func=_cmd_train, _parser=t)
    b = fsub.add_parser("bias", help="band-error table and plots for a model saved by `forecast train`")
    b.add_argument("dir", type=Path, help="the --out folder of `paperlab forecast train`")
    b.add_argument("--threads", type=int, default=1, help="torch threads")
    b.set_defaults(func=_cmd_bias, _parser=b)
