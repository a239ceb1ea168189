"""The demo models' training curves."""

from swapkl.figures.figure_registry import Figure, register

register(Figure("training_curves", "swapkl.figures.demo.training:plot_training_curves",
                {"runs": "resources/demo/models/{model}"}, "global", "demo",
                "held-out and training loss vs step of the demo models", log="logs/demo/plot_training_curves.log",
                targets="demo", expand={"runs": "demo"},
                params={"training_logs": "training_logs", "setup": "demo_training"}, plot_params=("training_logs",),
                reads=()))
