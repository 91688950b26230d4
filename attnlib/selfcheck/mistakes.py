"""Every named mistake of the course and the hint that names its idea, defined once.

A mistake code is what ``check`` prints in brackets, ``✗ scores: wrong (transposed): <hint>``.
Exercises name the codes they recognise (``attnlib/checkers/lesson_NN.py``); a code that is
not listed here is refused when the exercise is declared. To add one, add a line here.
"""

MISTAKES = {
    "transposed": (
        "rows and columns are swapped: scores are Q K^T (one row per query, one column per "
        "key), not K Q^T, and the weights keep one row per query."
    ),
    "unscaled": "the scores were not scaled: divide Q K^T by sqrt(d_k) before the softmax.",
    "divided_by_d_k": (
        "the scores were divided by d_k itself: the scaling divides by its square root, sqrt(d_k)."
    ),
    "multiplied": "the scores were multiplied by sqrt(d_k): the scaling divides by sqrt(d_k).",
    "wrong_axis": (
        "softmax ran down the columns: each row (one query over all keys) must sum to 1, so "
        "normalise along the last axis."
    ),
    "overflow": (
        "inf or nan on large scores: subtract each row's maximum before exp (softmax ignores "
        "shifts, and exp overflows past about 709)."
    ),
    "wrong_d": (
        "scaled with the wrong width: d_k is the width of the queries and keys, not d_model "
        "(the width of X) or d_v (the width of V)."
    ),
    "swapped_qk": "W_Q and W_K are swapped: queries are X W_Q and keys are X W_K.",
    "tokens_as_columns": (
        "tokens went into columns: each token is a row, so X has shape (n, d_model), one row "
        "per token."
    ),
    "rows_out_of_order": "the rows must follow the sentence: row i is token i.",
    "row_not_column": (
        "that is a row (one token's vector); a column, one feature across every token, is X[:, j]."
    ),
    "off_by_one": "numpy counts from 0: the table's dim 3 is index 2.",
    "no_keepdims": (
        "a row's max and sum must stay columns, shape (n_q, 1): use keepdims=True, or numpy "
        "lines them up with the columns (square scores) or refuses to (n_q != n_k)."
    ),
    "global_max": (
        "subtract each row's own max, not the largest score in the whole table: a row far "
        "below it underflows to exp(...) = 0 everywhere and gives 0 / 0."
    ),
    "kept_d_model": (
        "d_model is the inner size of X @ W_Q and disappears: Q has one row per token and d_k"
        " columns."
    ),
    "used_w_v": "that is a value: queries are made with W_Q, values with W_V.",
    "loop_index": (
        "in the double loop, i picks the query and j picks the key: the sum needs Q[i, m] * "
        "K[j, m]."
    ),
    "scores_not_linear": (
        "a score is a sum of products q_m k_m: doubling every k_m doubles the sum."
    ),
    "score_gaps": (
        "softmax only sees the gaps between a row's scores: adding the same number to all of "
        "them changes nothing, multiplying them widens the gaps (sharper weights) and "
        "dividing them narrows the gaps (flatter weights)."
    ),
    "counted_tokens": (
        "scaled by the number of tokens: d_k is the width of each query and key, Q.shape[-1],"
        " not len(Q) or K.shape[0], which count rows."
    ),
    "not_normalised": (
        "the weights of a row sum to 1: spreading attention evenly over n_k keys puts 1/n_k "
        "on each, so the blend is the mean of the value rows, not their sum."
    ),
    "output_shape": (
        "the output has one row per query and one column per entry of a value: (n_q, d_v). "
        "The keys are summed away, and d_k only lives inside the scores."
    ),
    "order_matters": (
        "attention treats the keys as a set: moving a key together with its value only "
        "reorders the terms of each weighted sum, and a sum does not depend on order."
    ),
    "spread_not_squared": (
        "variances multiply, not spreads: Var(q_i k_i) = s_q^2 s_k^2, so square each spread."
    ),
    "variance_divided_by_root": (
        "dividing a score by sqrt(d_k) divides its variance by sqrt(d_k)^2 = d_k (Var(x / c) "
        "= Var(x) / c^2)."
    ),
    "saturation": (
        "without scaling the spread of the scores grows like sqrt(d_k), so the largest score "
        "pulls further ahead and softmax hands it almost all the weight."
    ),
    "mask_after_softmax": (
        "the mask was applied after softmax without renormalising, so rows no longer sum to "
        "1: hide keys before softmax (score -inf), or divide each row by its new sum."
    ),
    "inverted_mask": (
        "the mask is inverted: True means the query MAY attend to the key, so hide the keys "
        "where the mask is False."
    ),
    "causal_sees_future": (
        "the triangle is flipped: row i is query i, and it may see key j only when j <= i "
        "(keys written at or before it), so the 1s fill the lower triangle, not the upper "
        "one."
    ),
    "causal_excludes_self": (
        "a query may always see its own position: the causal mask keeps the diagonal (key j <= i)."
    ),
    "mask_ignored": (
        "the mask had no effect: put -inf into the scores where the mask is False, before softmax."
    ),
    "empty_row": (
        "every score in that row is -inf, so its max is -inf and -inf - (-inf) is nan "
        "(without the max, exp gives all zeros and 0 / 0 is nan)."
    ),
    "reshape_no_transpose": (
        "reshaped straight to (n_heads, n, d_head) with no transpose: that mixes heads with "
        "positions. Reshape to (n, n_heads, d_head) first, then swap the first two axes."
    ),
    "heads_interleaved": (
        "each head got every n_heads-th column: head h owns one block of d_head neighbouring "
        "columns, so reshape to (n, n_heads, d_head), not (n, d_head, n_heads)."
    ),
    "merge_no_transpose": (
        "the heads were merged with a reshape alone, which mixes tokens: move the head axis "
        "back behind the token axis (transpose) before reshaping to (n, n_heads * d_v)."
    ),
    "no_output_projection": (
        "the merged heads were returned as they are: multiply them by W_O, where the heads meet."
    ),
    "cross_keys_from_queries": (
        "in cross-attention the keys come from the other sequence: the weights are (n_heads, "
        "n_q, n_k), with n_k the length of the sequence that gives keys and values."
    ),
    "jacobian_missing_outer": (
        "the Jacobian is missing the outer product: the denominator of softmax depends on "
        "every score, so d p_i / d x_j = p_i (delta_ij - p_j), i.e. diag(p) - p p^T. Each row"
        " sums to 0."
    ),
    "jacobian_sign": (
        "the signs are flipped: raising a score raises its own weight (diagonal p_i (1 - p_i)"
        " is positive) and lowers the others (off the diagonal -p_i p_j is negative)."
    ),
    "softmax_skipped": (
        "the gradient went from A to S as if softmax were not there: dS_i must go through the"
        " row's Jacobian, a * (dA - (a . dA))."
    ),
    "backward_unscaled": (
        "the backward pass forgot 1/sqrt(d_k): the scores were divided by sqrt(d_k), so dQ "
        "and dK are divided by it too."
    ),
    "saturated_gradients": (
        "larger scores push softmax towards one weight near 1 and the rest near 0, where "
        "every p_i (delta_ij - p_j) is near 0: the Jacobian shrinks, and so do the gradients."
    ),
    "linear_in_n": (
        "the count grew like n: every query meets every key, so the score matrix holds n x n "
        "numbers and doubling n multiplies it by 4."
    ),
    "float32_bytes": "a float64 number takes 8 bytes (64 bits); 4 bytes is float32.",
    "decimal_megabytes": "a MiB is 2^20 = 1,048,576 bytes, not 10^6: divide the bytes by 2**20.",
    "blocked_memory_quadratic": (
        "blocked attention never holds the n x n matrix, only an (n, block_size) slice and "
        "running values of n rows: its memory grows like n (its time still grows like n^2)."
    ),
    "no_rescale": (
        "the old running sum was not rescaled: it was measured from the old max, so multiply "
        "it by exp(m_old - m_new) before adding the new block's exps."
    ),
    "rescale_inverted": (
        "the rescale factor is upside down: the old sum shrinks when the max rises, so "
        "multiply by exp(m_old - m_new) (at most 1), not exp(m_new - m_old)."
    ),
    "values_not_rescaled": (
        "the running sum of weighted values was not rescaled: when the max rises it must be "
        "multiplied by exp(m_old - m_new), exactly like the running sum l."
    ),
    "per_block_softmax": (
        "each block was normalised on its own: the softmax's denominator runs over all keys, "
        "so keep one running sum and divide by it once, at the end."
    ),
    # lessons 01-06
    "one_hot_position": (
        "the 1 of a token goes in that token's column of the vocabulary, vocab.index(token), "
        "not in the column of its position in the sentence."
    ),
    "qk_gram_dk": (
        "W_Q^T W_K is (d_k, d_k) and never meets a token: q_i . k_j = x_i W_Q (x_j W_K)^T = "
        "x_i (W_Q W_K^T) x_j^T, so the matrix between the two tokens is W_Q W_K^T, "
        "(d_model, d_model)."
    ),
    "trivial_witness": (
        "z = 0 proves nothing, since S 0 = 0 for every matrix: a dependency between the "
        "columns of S needs a z that is not 0 (here its last entry is 1)."
    ),
    "witness_keys_as_columns": (
        "z weights the keys, and the keys are the rows of K: K^T z = z_1 k_1 + z_2 k_2 + ... "
        "= 0 has the keys as the columns of its matrix (K[:d_k].T in np.linalg.solve, not "
        "K[:d_k])."
    ),
    "batch_width": (
        "in a batch, Q has shape (..., n_q, d_k): len(Q) and Q.shape[0] count sentences (or "
        "heads), and d_k is always the last axis, Q.shape[-1]."
    ),
    "shift_per_row": (
        "softmax ignores a shift shared by a whole row (one query's scores); adding to one "
        "key's column widens that key's lead in every row, so its weight rises everywhere."
    ),
    "weights_sum_to_one": (
        "a row of weights sums to 1: with two output entries and three weights, the third "
        "equation is w_1 + w_2 + w_3 = 1 (without it, many weights give the same output)."
    ),
    "delta_not_weighted": (
        "output row i takes eat's value with weight A[i, eat]: changing eat's value by d "
        "changes row i by A[i, eat] d, not by all of d (the weights do not depend on V)."
    ),
    # end of lessons 01-06
}
