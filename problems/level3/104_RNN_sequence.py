import torch
import torch.nn as nn


class Model(nn.Module):
    """
    An Elman RNN unrolled over a sequence: h_t = tanh(W_x x_t + b_x + W_h h_{t-1} + b_h).
    Returns every hidden state.
    """

    def __init__(self, input_size, hidden_size):
        super(Model, self).__init__()
        self.input_map = nn.Linear(input_size, hidden_size)
        self.hidden_map = nn.Linear(hidden_size, hidden_size)

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
            h = torch.tanh(self.input_map(x[t]) + self.hidden_map(h))
            states.append(h)
        return torch.stack(states)


seq_len = 256
batch_size = 256
input_size = 2048
hidden_size = 2048

KBV_CPU = {"seq_len": 8, "batch_size": 4, "input_size": 32, "hidden_size": 32}


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size), torch.rand(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
