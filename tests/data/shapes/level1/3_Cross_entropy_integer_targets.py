# tests/data/shapes: upstream L1/95's pattern. Integer class targets: kbv passes them as int64;
# upstream KernelBench's harness casts every input tensor to float32 and the reference fails.
# `num_classes` is read by randint only (the logits' width is `input_shape`, computed at import):
# halving it changes no shape, so `--cpu-sizes` leaves it alone.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)


batch_size = 32768
num_classes = 4096
input_shape = (num_classes,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
