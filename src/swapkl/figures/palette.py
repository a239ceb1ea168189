"""The colours of swapkl figures (no plotting import: modules that only name colours load without matplotlib)."""

# Okabe-Ito colour-blind-safe palette
BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
SKY = "#56B4E9"
GREY = "#7F7F7F"

#: the colour of each position encoding (the scale sweep's and the position-encoding ablation's figures)
PE_COLOURS = {"learned": BLUE, "alibi": GREEN, "rope": VERMILLION}

#: the order in which figures hand out colours to a list of series (models, heads, training runs)
CYCLE = (BLUE, VERMILLION, GREEN, ORANGE, PURPLE, SKY, GREY)


def cycled(k: int, skip: tuple[str, ...] = ()) -> str:
    """The colour of the ``k``-th series (repeating), leaving out ``skip`` (colours the figure gives
    another meaning)."""
    colours = [c for c in CYCLE if c not in skip]
    return colours[k % len(colours)]
