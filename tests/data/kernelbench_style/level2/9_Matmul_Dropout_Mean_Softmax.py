import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Linear, dropout, mean over the features (keepdim), softmax over that size-1 dimension.
    """

    def __init__(self, in_features, out_features, dropout_p):
        super(Model, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        x = self.matmul(x)
        x = self.dropout(x)
        x = torch.mean(x, dim=1, keepdim=True)
        return torch.softmax(x, dim=1)


batch_size = 128
in_features = 256
out_features = 256
dropout_p = 0.2


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, dropout_p]
