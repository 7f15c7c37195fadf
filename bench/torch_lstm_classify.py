"""torch_lstm_classify.py -- examples/lstm_classify.pd in PyTorch, on the same data and epochs:
the lines of GPL-3, Apache-2.0 and MPL-2.0 (/usr/share/common-licenses) read as pdlang's lines()
reads them (split at \\n, a \\r before it dropped, blank lines skipped, the non-blank lines
numbered from 1 and every 5th held out for the test, each cut to 80 bytes), an embedding of the
bytes to 16 (init normal(0, 0.1)), an LSTM of 32 over each line forwards and another backwards
(stdlib's lstm: W_ih and W_hh xavier-uniform, one bias per gate, 0), the maximum over the
steps of the forward outputs next to both last states, a linear layer to 3 (xavier, bias 0);
Adam 0.005 with the gradients' global norm clipped to 5 and a cosine rate over the steps;
batches of 32 in a new random order every epoch, 20 epochs. Prints the share of GPL-3 in the
test lines and the accuracy on the training and test lines.
Usage: torch_lstm_classify.py [--seed S] [--epochs E] [--threads T]"""
from torch_util import example_options, fit_and_report, license_splits

MAXLEN, E, H = 80, 16, 32


def main():
    opts = example_options()
    if opts is None:
        return
    torch, epochs = opts

    def tensors(xs, ys):  # the lines padded to MAXLEN, their lengths, the labels
        lens = torch.tensor([len(r) for r in xs])
        pad = torch.zeros(len(xs), MAXLEN, dtype=torch.long)
        for i, r in enumerate(xs):
            pad[i, :len(r)] = torch.tensor(r)
        return pad, lens, torch.tensor(ys)

    train, test = license_splits(tensors, max_length=MAXLEN)

    pack = torch.nn.utils.rnn.pack_padded_sequence

    def lstm(in_dim):
        m = torch.nn.LSTM(in_dim, H, batch_first=True)
        torch.nn.init.xavier_uniform_(m.weight_ih_l0)
        torch.nn.init.xavier_uniform_(m.weight_hh_l0)
        torch.nn.init.zeros_(m.bias_ih_l0)
        torch.nn.init.zeros_(m.bias_hh_l0)
        m.bias_hh_l0.requires_grad_(False)  # stdlib's lstm has one bias a gate
        return m

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(256, E)
            torch.nn.init.normal_(self.emb.weight, 0.0, 0.1)
            self.fwd, self.bwd = lstm(E), lstm(E)
            self.out = torch.nn.Linear(3 * H, 3)
            torch.nn.init.xavier_uniform_(self.out.weight)
            torch.nn.init.zeros_(self.out.bias)

        def forward(self, x, lens):
            e = self.emb(x)
            hs, (h, _) = self.fwd(pack(e, lens, batch_first=True, enforce_sorted=False))
            hs, _ = torch.nn.utils.rnn.pad_packed_sequence(hs, batch_first=True,
                                                           total_length=MAXLEN)
            valid = torch.arange(MAXLEN)[None, :] < lens[:, None]
            top = hs.masked_fill(~valid[:, :, None], float("-inf")).max(1).values
            # each line reversed within its length: the backward LSTM's last state is the one
            # after the line's first character
            idx = (lens[:, None] - 1 - torch.arange(MAXLEN)[None, :]).clamp(min=0)
            rev = torch.gather(e, 1, idx[:, :, None].expand(-1, -1, E))
            _, (r, _) = self.bwd(pack(rev, lens, batch_first=True, enforce_sorted=False))
            return self.out(torch.cat([top, h[0], r[0]], 1))

    model = Model()
    (xtr, ltr, ytr), (xte, lte, yte) = train, test
    fit_and_report(torch, model, ((xtr, ltr), ytr), ((xte, lte), yte), epochs, 0.005)


main()
