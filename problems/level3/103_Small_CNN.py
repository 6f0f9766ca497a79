import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A small image classifier for 3x32x32 inputs: two blocks of conv5x5 - BatchNorm - ReLU -
    maxpool2, then linear - ReLU - linear to the class logits. Batch normalisation in training
    mode.
    """

    def __init__(self, num_classes):
        super(Model, self).__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=5)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=5)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(64 * 5 * 5, 512)
        self.fc2 = nn.Linear(512, num_classes)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): shape (batch_size, 3, 32, 32).

        Returns:
            torch.Tensor: shape (batch_size, num_classes).
        """
        x = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)  # (b, 32, 14, 14)
        x = torch.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)  # (b, 64, 5, 5)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


# The batch norms matter: without them the biases dominate every layer once the inputs are
# scaled by 0.01 (D3), and the logits of two different batches differ by only 2e-3 relative
# (kbv lint-problems stats), close to the 1e-3 floor.
batch_size = 32768
num_classes = 10

KBV_CPU = {"batch_size": 4}


def get_inputs():
    return [torch.rand(batch_size, 3, 32, 32)]


def get_init_inputs():
    return [num_classes]
