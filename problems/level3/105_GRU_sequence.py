import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A GRU cell (torch.nn.GRUCell: reset, update and new gates) unrolled over a sequence.
    Returns every hidden state.
    """

    def __init__(self, input_size, hidden_size):
        super(Model, self).__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x, h0):
        """
        Args:
            x (torch.Tensor): shape (seq_len, batch_size, input_size).
            h0 (torch.Tensor): shape (batch_size, hidden_size).

        Returns:
            torch.Tensor: shape (seq_len, batch_size, hidden_size).
        """
        h = h0
        states = []
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
            states.append(h)
        return torch.stack(states)


seq_len = 256
batch_size = 256
input_size = 1024
hidden_size = 1024

KBV_CPU = {"seq_len": 8, "batch_size": 4, "input_size": 32, "hidden_size": 32}


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size), torch.rand(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
