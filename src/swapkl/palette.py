"""The colours of swapkl figures (no plotting import, so the guide registry can name them)."""

# Okabe-Ito colour-blind-safe palette
BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
SKY = "#56B4E9"
GREY = "#7F7F7F"
