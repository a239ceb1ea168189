"""The report's figures, declared: each module registers the entries of one family of figures with
:func:`swapkl.figures.figure_registry.register` when imported, and :func:`swapkl.figures.figure_registry.figures` imports every
module here. These modules import no plotting library; each entry names its plot function as a string."""
