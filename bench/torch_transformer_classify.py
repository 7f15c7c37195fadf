"""torch_transformer_classify.py -- examples/transformer_classify.pd in PyTorch, on the same data
and epochs: the lines of GPL-3, Apache-2.0 and MPL-2.0 (/usr/share/common-licenses) read as
pdlang's lines() reads them (split at \\n, a \\r before it dropped, blank lines skipped, the
non-blank lines numbered from 1 and every 5th held out for the test, lines shorter than 48
bytes left out, the others cut to 48), an embedding of the bytes to 32 (init normal(0, 0.1))
plus a learned position embedding [48, 32] (normal(0, 0.1)), two
torch.nn.TransformerEncoderLayer (d 32, 4 heads, feed-forward 64, dropout 0.1, relu, post-norm;
weights xavier-uniform per projection as pdlang's linear, biases 0), the mean over the
positions, a linear layer to 3; Adam 0.003 with the gradients' global norm clipped to 5 and a
cosine rate over the steps; batches of 32 in a new random order every epoch, 20 epochs.
Prints the share of GPL-3 in the test lines and the accuracy on the training and test lines.
Usage: torch_transformer_classify.py [--seed S] [--epochs E] [--threads T]"""
from torch_util import example_options, fit_and_report, license_splits

L, D, HEADS, FF = 48, 32, 4, 64


def main():
    opts = example_options()
    if opts is None:
        return
    torch, epochs = opts
    train, test = license_splits(lambda xs, ys: (torch.tensor(xs), torch.tensor(ys)),
                                 min_length=L, max_length=L)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(256, D)
            self.pos = torch.nn.Parameter(torch.randn(L, D) * 0.1)
            self.layers = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=FF, dropout=0.1,
                                                 batch_first=True) for _ in range(2))
            self.out = torch.nn.Linear(D, 3)
            torch.nn.init.normal_(self.emb.weight, 0.0, 0.1)
            for name, p in self.named_parameters():
                if name.endswith("in_proj_weight"):
                    for part in p.data.chunk(3):
                        torch.nn.init.xavier_uniform_(part)
                elif p.dim() == 2 and "emb" not in name and name != "pos":
                    torch.nn.init.xavier_uniform_(p)
                elif name.endswith("bias"):
                    torch.nn.init.zeros_(p)

        def forward(self, x):
            h = self.emb(x) + self.pos
            for layer in self.layers:
                h = layer(h)
            return self.out(h.mean(1))

    model = Model()
    (xtr, ytr), (xte, yte) = train, test
    fit_and_report(torch, model, ((xtr,), ytr), ((xte,), yte), epochs, 0.003)


main()
