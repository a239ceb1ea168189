"""Figures of task-calibrated pruning (the second paper's task-specific table and the Gromov curves)."""

from swapkl.figures.figure_registry import Figure, register

TASK_PRUNING = "results/seed003_pruning.parquet"

register(Figure("task_specific_pruning", "swapkl.figures.task_pruning.curves:plot_task_specific",
                {"pruning": TASK_PRUNING}, "global", "pruning",
                "task-specific pruning: methods x tasks accuracy at the main budget", targets="task_pruning"))
register(Figure("gromov_curves", "swapkl.figures.task_pruning.curves:plot_gromov_curves",
                {"pruning": TASK_PRUNING}, "global", "pruning",
                "accuracy against blocks removed per task, cosine- and accuracy-guided", targets="task_pruning"))
