/* summary.c -- a model's summary (lang/summary.h): the main program's block-0 ops grouped by
 * the call they come from (consecutive ops with one source location: a layer of the stdlib, an
 * op, a def call's ops placed at its call), each with the call's text, the shape of its last
 * op's output and the elements of the parameters it reads first, in columns as wide as their
 * widest cell (a call's text cut at 60 characters); then the totals. */
#include "config.h"
#include "lang/summary.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "vm/ir/program.h"

/* The call's text at loc: from loc to the end of its balanced parentheses (at most n - 1
 * bytes, "..." when cut), or "" when the source is not there. */
static void call_text(const pd_source *src, pd_loc loc, char *buf, size_t n) {
  buf[0] = 0;
  size_t len;
  const char *line = src && loc.line > 0 ? pd_source_line(src, loc.line, &len) : NULL;
  if (!line || loc.col < 1 || (size_t)loc.col > len) return;
  const char *p = line + loc.col - 1, *end = line + len, *q = p;
  int depth = 0;
  while (q < end && (depth > 0 || (*q != ')' && *q != ',' && *q != '#' && *q != ']'))) {
    if (*q == '(' || *q == '[') depth++;
    else if (*q == ')' || *q == ']') {
      if (--depth == 0) {
        q++;
        break;
      }
    } else if (depth == 0 && (*q == ' ' || *q == '\t')) {
      break;  /* an operator's left operand: the expression ends at the blank */
    }
    q++;
  }
  size_t m = (size_t)(q - p);
  if (m + 1 > n) snprintf(buf, n, "%.*s...", (int)(n - 4), p);
  else snprintf(buf, n, "%.*s", (int)m, p);
}

static bool same_loc(pd_loc a, pd_loc b) {
  return a.line == b.line && a.col == b.col &&
         ((!a.file && !b.file) || (a.file && b.file && strcmp(a.file, b.file) == 0));
}

static int64_t numel(const pd_var_desc *v) {
  int64_t n = 1;
  for (int i = 0; i < v->ndims; i++) n *= v->dims[i] < 0 ? 1 : v->dims[i];
  return v->ndims < 0 ? 0 : n;
}

static bool is_param(const pd_var_desc *v) {
  return v && v->persistable && v->type == PD_VAR_LOD_TENSOR;
}

pd_status pd_unit_summary(const pd_unit *unit, const pd_source *src, pd_buf *out,
                          pd_summary_totals *totals) {
  const pd_block *b0 = unit->main->blocks[0];
  pd_summary_totals t = {0};
  for (int i = 0; i < b0->nvars; i++)
    if (is_param(b0->vars[i])) {
      t.params += numel(b0->vars[i]);
      if (!b0->vars[i]->stop_gradient) t.trainable += numel(b0->vars[i]);
    }
  bool *counted = pd_calloc((size_t)b0->nvars + 1, sizeof *counted);
  struct row {
    char where[64], text[61], shape[48];
    int64_t params;
  } *rows = pd_calloc((size_t)b0->nops + 1, sizeof *rows);
  if (!counted || !rows) {
    pd_free(counted);
    pd_free(rows);
    return PD_ENOMEM;
  }
  int nrows = 0;
  for (int i = 0; i < b0->nops;) {
    pd_loc loc = pd_op_user_loc(b0->ops[i]);  /* a layer's ops: where the user called it */
    int j = i;
    int64_t params = 0;
    for (; j < b0->nops && same_loc(pd_op_user_loc(b0->ops[j]), loc); j++) {
      const pd_op_desc *op = b0->ops[j];
      for (int s = 0; s < op->ninputs; s++)
        for (int a = 0; a < op->inputs[s].nargs; a++)
          for (int v = 0; v < b0->nvars; v++)
            if (!counted[v] && is_param(b0->vars[v]) &&
                strcmp(b0->vars[v]->name, op->inputs[s].args[a]) == 0) {
              counted[v] = true;
              params += numel(b0->vars[v]);
            }
    }
    /* The output: the last op's Out (Y, Output, Loss), else its first. */
    const pd_op_desc *last = b0->ops[j - 1];
    const char *outname = last->noutputs && last->outputs[0].nargs ? last->outputs[0].args[0] : "";
    for (int s = 0; s < last->noutputs; s++) {
      const char *slot = last->outputs[s].param;
      if (last->outputs[s].nargs && (!strcmp(slot, "Out") || !strcmp(slot, "Y") ||
                                     !strcmp(slot, "Output") || !strcmp(slot, "Loss"))) {
        outname = last->outputs[s].args[0];
        break;
      }
    }
    const pd_var_desc *ov = pd_block_find_var_local(b0, outname);
    struct row *rw = &rows[nrows++];
    char *where = rw->where, *text = rw->text, *shape = rw->shape;
    rw->params = params;
    const char *file = loc.file ? strrchr(loc.file, '/') : NULL;
    file = file ? file + 1 : loc.file ? loc.file : "?";
    snprintf(where, sizeof rw->where, "%s:%d", file, loc.line);
    const pd_source *s = loc.file ? pd_unit_source(unit, src, loc.file) : NULL;
    call_text(s, loc, text, sizeof rw->text);
    /* An operator (x @ w) is placed at its sign: the op's type says more. */
    if (!isalpha((unsigned char)text[0]) && text[0] != '_')
      snprintf(text, sizeof rw->text, "%s", last->type);
    if (ov && ov->ndims >= 0) pd_dims_str(ov->ndims, ov->dims, shape, sizeof rw->shape);
    t.layers++;
    i = j;
  }
  /* Each column as wide as its widest cell, the header's included. */
  int w[4] = {(int)strlen("line"), (int)strlen("layer"), (int)strlen("output shape"),
              (int)strlen("params")};
  for (int k = 0; k < nrows; k++) {
    char num[24];
    int len[4] = {(int)strlen(rows[k].where), (int)strlen(rows[k].text),
                  (int)strlen(rows[k].shape),
                  snprintf(num, sizeof num, "%lld", (long long)rows[k].params)};
    for (int c = 0; c < 4; c++) w[c] = len[c] > w[c] ? len[c] : w[c];
  }
  int line = w[0] + w[1] + w[2] + w[3] + 3;
  pd_buf_printf(out, "%-*s %-*s %-*s %*s\n", w[0], "line", w[1], "layer", w[2], "output shape",
                w[3], "params");
  for (int k = 0; k < line; k++) pd_buf_puts(out, "=");
  pd_buf_puts(out, "\n");
  for (int k = 0; k < nrows; k++)
    pd_buf_printf(out, "%-*s %-*s %-*s %*lld\n", w[0], rows[k].where, w[1], rows[k].text, w[2],
                  rows[k].shape, w[3], (long long)rows[k].params);
  pd_free(rows);
  for (int k = 0; k < line; k++) pd_buf_puts(out, "=");
  pd_buf_printf(out, "\nTotal params: %lld\nTrainable params: %lld\nNon-trainable params: %lld\n",
                (long long)t.params, (long long)t.trainable,
                (long long)(t.params - t.trainable));
  pd_free(counted);
  if (totals) *totals = t;
  return out->oom ? PD_ENOMEM : PD_OK;
}
