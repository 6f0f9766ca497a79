import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A deep, narrow ReLU MLP with PyTorch's default initialisation.
    """

    def __init__(self, input_size, hidden_size, num_layers, output_size):
        super(Model, self).__init__()
        layers = []
        size = input_size
        for _ in range(num_layers):
            layers += [nn.Linear(size, hidden_size), nn.ReLU()]
            size = hidden_size
        layers.append(nn.Linear(size, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


batch_size = 64
input_size = 256
hidden_size = 64
num_layers = 16
output_size = 32


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size]
