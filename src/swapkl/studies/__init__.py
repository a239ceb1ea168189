"""Studies of the layer-order literature: spans, Jacobians, the RoPE counterfactual, scaling, slices."""
