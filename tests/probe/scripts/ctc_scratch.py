"""CTC loss with targets of unequal length: its work buffer has slots nothing writes."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
lin = torch.nn.Linear(4, 6)
x = torch.randn(12, 3, 4)
targets = torch.randint(1, 6, (3, 5))
target_lengths = torch.tensor([5, 2, 3])
input_lengths = torch.tensor([12, 10, 8])
for _ in range(2):
    log_probs = lin(x).log_softmax(2)
    loss = F.ctc_loss(log_probs, targets, input_lengths, target_lengths)  # CTC LINE
    loss.backward()
    print(loss.item())
