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
    "hard_coded_d_k": (
        "the divisor is a number typed in: d_k changes from one input to the next, so read it "
        "from the arrays (the last axis of Q or K) and divide by its square root."
    ),
    "column_max": (
        "the max was taken down the columns: the shift must be shared by a whole row (each "
        "query's own max, axis=-1); a column's max differs from key to key and changes the "
        "weights even though each row still sums to 1."
    ),
    "wrong_axis": (
        "softmax ran down the columns: each row (one query over all keys) must sum to 1, so "
        "normalise along the last axis."
    ),
    "overflow": (
        "inf or nan on large scores: subtract each row's maximum before exp (softmax ignores "
        "shifts, and exp overflows past about 709 in float64, 88.7 in float32, 11.09 in "
        "float16)."
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
    "rows_out_of_order": "the rows must follow the sentence: row i is the word in place i.",
    "row_not_column": (
        "that is a row (one token's vector); a column, one feature across every token, is X[:, j]."
    ),
    "off_by_one": "numpy counts from 0: the table's dim 3 is index 2.",
    "rows_counted_from_1": (
        "rows are counted from 0, as numpy counts them: eat's input (0, 2, 0, 1) is 0 at "
        "indices 0 and 2, so rows 0 and 2 of dW_Q = X^T dQ get nothing; rows 1 and 3 move."
    ),
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
    "mask_after_softmax": (
        "the mask was applied after softmax without renormalising, so rows no longer sum to "
        "1: hide keys before softmax (score -inf), or divide each row by its new sum."
    ),
    "renormalised_after_softmax": (
        "dividing each row by its new sum is right on paper, but the softmax subtracted the "
        "maximum over all keys, hidden ones included: when a hidden key outscores every visible "
        "one by more than about 745, the visible weights underflow to 0 and the row divides "
        "0 / 0. Hide the keys before softmax (score -inf), so the maximum is a visible key's."
    ),
    "inverted_mask": (
        "the mask is inverted: True means the query MAY attend to the key, so hide the keys "
        "where the mask is False."
    ),
    "padding_off_by_one": (
        "one pad too many is visible: positions count from 0, so a sentence of length L has "
        "real keys 0 to L - 1, and key j is real when j < L, not j <= L."
    ),
    "empty_row_nan": (
        "a query that may see no key came back as NaN: every score of its row is -inf, so "
        "the row max is -inf and -inf - (-inf) is undefined. Give such a row zeros instead "
        "(np.any(mask, axis=-1) finds the rows with a key to read)."
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
    "chain_not_transposed": (
        "that is J G, the Jacobian read along its rows: the gradient of input j collects "
        "column j of J (how every output moves per unit of m_j), weighted by G: J^T G."
    ),
    "chain_without_G": (
        "each output's move counts with its own weight G_i: add G_0 times y_0's move and G_1 "
        "times y_1's, not the moves alone."
    ),
    "softmax_skipped": (
        "the gradient went from A to S as if softmax were not there: dS_i must go through the"
        " row's Jacobian, a * (dA - (a . dA))."
    ),
    "backward_unscaled": (
        "the backward pass forgot 1/sqrt(d_k): the scores were divided by sqrt(d_k), so dQ "
        "and dK are divided by it too."
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
    # lesson 29 (FlashAttention)
    "lse_without_max": (
        "L is the log of the whole row's sum, log sum_j exp(s_j); the running sum l was "
        "measured from the max m, so L = m + log(l), not log(l)."
    ),
    "flash_backward_quadratic": (
        "the tiled backward never holds an n x n array: it rebuilds one (n, block_size) tile "
        "of weights at a time from L, so its memory grows like n."
    ),
    "flash_D_per_tile": (
        "the row term sums over every key of the row, not only the tile's: compute it once, "
        "before the loop over tiles, from dOutput and output."
    ),
    "flash_D_wrong_arrays": (
        "the row term pairs the gradient of the output with the output itself, row by row: "
        "D_i = dOutput_i . output_i, a dot product of two rows of width d_v."
    ),
    "flash_tile_max": (
        "rebuild each tile's weights from the saved L, exp(S_tile - L): a tile's own max and "
        "sum would normalise it over that tile alone, not over the whole row."
    ),
    "merge_unweighted": (
        "each part's output is a softmax over its own keys only: weight it by its share of "
        "the whole row's sum, exp(L_part - L), not by 1/2."
    ),
    "merge_l_added": (
        "log-sum-exps do not add: the sums add, so L = log(exp(L_a) + exp(L_b)), computed "
        "from the larger one out, max + log(exp(L_a - max) + exp(L_b - max))."
    ),
    # lesson 28 (sliding-window attention)
    "window_off_by_one": (
        "the window holds one key too many: with a window of w, query i sees w keys, its own "
        "and the w - 1 before it (i - w < j <= i); without causality |i - j| < w, not <= w."
    ),
    "window_forgotten": (
        "every key was kept, as in plain causal decoding: a window of w keeps only the last w "
        "tokens, so token t overwrites token t - w in slot t % w."
    ),
    "window_made_causal": (
        "this window has no causality: a query also sees the keys fewer than w places after "
        "it, |i - j| < w on either side."
    ),
    "window_top_left": (
        "the new tokens are the last n_q of n_k: query i sits at position p = n_k - n_q + i "
        "(bottom-right) and its window is keys p - w + 1 .. p, not i - w + 1 .. i."
    ),
    "window_not_causal": (
        "a decoder's window never reaches keys after the query: keep j <= p as well as j > p - w."
    ),
    "ring_overwrites_newest": (
        "once the ring is full, the new token must overwrite the oldest one, in slot t % w; "
        "writing always into the last slot keeps the first w - 1 tokens forever."
    ),
    "ring_listed_by_age": (
        "those are the live tokens oldest first; the slots hold them where they were written, "
        "token t in slot t % w, so the order wraps around."
    ),
    "ring_slot_shifted": (
        "token t goes into slot t % w: token 0 into slot 0, token w into slot 0 again."
    ),
    "window_count_no_edges": (
        "2 w - 1 keys per row holds only away from the edges: the first and the last w - 1 "
        "rows miss some keys, w (w - 1) in all."
    ),
    "window_count_causal": (
        "that is the causal window's count, keys i - w + 1 .. i; the window alone also counts "
        "the keys after the query, |i - j| < w."
    ),
    # lesson 30 (a tiny GPT)
    "ce_sign": (
        "the loss is -log p_t, a positive number: log of a probability is negative, so keep "
        "the minus sign."
    ),
    "ce_grad_no_onehot": (
        "dlogits is p - onehot(t): subtract 1 at the target token, whose logit the loss pushes up."
    ),
    "ce_grad_sign": (
        "dlogits is p - onehot(t), not onehot(t) - p: raising a wrong token's logit raises the "
        "loss, so its gradient is positive."
    ),
    "ln_backward_no_mean": (
        "every entry of a row shares the row's mean: subtract mean(g) from g = dY * gamma "
        "before dividing by sigma."
    ),
    "ln_backward_no_projection": (
        "every entry of a row shares the row's sigma too: also subtract x_hat * mean(g * x_hat), "
        "the part of g that would only stretch the row."
    ),
    "ln_backward_gamma_forgotten": (
        "the output is gamma * x_hat + beta, so the gradient reaching x_hat is dY * gamma, not dY."
    ),
    "untrained_probability": (
        "that is the probability each token gets; the loss is -log of it, -log(1/vocab) = "
        "log(vocab)."
    ),
    "ce_log10": "the cross-entropy uses the natural logarithm (np.log), not log base 10.",
    "embedding_repeat_lost": (
        "dE[tokens] += dX adds once per distinct token: numpy's fancy-index assignment keeps "
        "only one of the repeated rows. Use np.add.at(dE, tokens, dX) or a loop over positions."
    ),
    "embedding_averaged": (
        "a token used at several positions gets the sum of their gradients, not the mean: each "
        "use adds to the loss on its own."
    ),
    "tied_one_path": (
        "with W_U = E^T, E is used twice (embedding and unembedding): its gradient is the sum "
        "of both paths, dE + dW_U^T."
    ),
    "tied_not_transposed": (
        "W_U = E^T, so W_U's gradient reaches E transposed: dE + dW_U^T, shape (vocab, d_model)."
    ),
    # lessons 07 to 11, 16, 18 and 22
    "temperature_inverted": (
        "the scores were multiplied by the temperature: a temperature T divides them, so T > 1"
        " narrows the gaps (flatter weights) and T < 1 widens them (sharper weights)."
    ),
    "over_scaled": (
        "dividing by d_k shrinks the spread of the scores like 1/sqrt(d_k) (Var(x / d_k) = "
        "Var(x) / d_k^2): the gaps close and softmax drifts towards the even 1/n_k."
    ),
    "proof_assumed_result": (
        "that is the result, not the step that proves it: with p_0, p_1, p_2 left free, row i"
        " of diag(p) - p p^T sums to p_i (1 - (p_0 + p_1 + p_2)); only then use that the "
        "weights sum to 1."
    ),
    "psd_not_sum_of_squares": (
        "that equals v^T J v, but nothing in it shows that it is >= 0: rewrite it as a sum in"
        " which no term can be negative, each a weight that is >= 0 times a square."
    ),
    "psd_unweighted_mean": (
        "the squares are centred on the plain mean of v: that sum is not v^T J v. Centre them "
        "on the average that the weights p make instead."
    ),
    "sign_forced": (
        "that forces the sign instead of showing it: Abs, Max, Piecewise, sign, Heaviside or "
        "re/im make any expression look >= 0 (your answer is not v^T J v where a weight is "
        "negative, as a formula made only of sums and products would be). Use sums, products "
        "and squares only."
    ),
    "finite_fill": (
        "-1e9 is a large but finite number: in a row where every key is hidden every score is "
        "-1e9, subtracting the max leaves 0 everywhere and exp gives equal weights, 1/n_k each."
    ),
    "top_left_with_cache": (
        "the diagonal starts at the top left, as if the new queries were the first tokens: "
        "with a cache they are the last n_q of n_k, so query i sees keys j <= n_k - n_q + i "
        "(causal_mask(n_q, n_k, align='bottom_right'))."
    ),
    "fd_divided_by_h": (
        "the two nudged points, c + h and c - h, are 2h apart: divide the change in the loss "
        "by 2h, not by h."
    ),
    "fd_sign": (
        "the sign is flipped: take the loss at the upper nudge minus the loss at the lower one, "
        "(L(c + h) - L(c - h)) / 2h."
    ),
    "fd_nudged_d_k": (
        "that is the rate per unit of d_k: nudge the divisor c = sqrt(d_k) itself, not d_k."
    ),
    "tied_scores_keep_gradient": (
        "two tied top scores stay tied when every score is multiplied: the weights go to "
        "(1/2, 1/2, 0), not to one weight of 1, and p_i (1 - p_i) = 1/4 stays."
    ),
    "blocks_not_skipped": (
        "a key block that the causal mask hides from a whole tile of queries was read: this "
        "input puts nan in the value of one key, which only queries at or after it may see, "
        "and the nan reached earlier queries (a weight of 0 times nan is still nan). Loop "
        "over the key blocks up to the tile's diagonal only."
    ),
    "diagonal_block_unmasked": (
        "only whole blocks of future keys were left out: the block that holds the diagonal "
        "still needs the mask inside it (key j <= query i), or each query sees a few keys "
        "after itself."
    ),
    # ---- lessons 12 and 13: attention with no weights; order and positions ----
    "row_sums_differ": (
        "the scores are symmetric, but softmax divides row i by its own sum Z_i, so "
        "Z_i a_ij = Z_j a_ji: the row with the smaller sum gives the larger weight, and the "
        "two weights are equal only when the row sums are."
    ),
    "dropped_key_term": (
        "softmax ignores only a term that is the same for every key of a row: -x^2 / "
        "(2 sigma^2) is (it belongs to the query), but x_j^2 and x x_j change from key to key."
    ),
    "pe_interleaved": (
        "that is the lesson's interleaved layout, pair i in columns 2i and 2i + 1; here pair i "
        "sits in columns i (sine) and i + d_model / 2 (cosine): every sine first, then every "
        "cosine."
    ),
    "sin_cos_swapped": (
        "sin and cos are swapped: position 0 must be (0, 1) in every pair, sin(0) in the even "
        "columns and cos(0) in the odd ones."
    ),
    "pe_exponent": (
        "the frequencies fall too slowly: pair i (columns 2i and 2i + 1) uses "
        "w_i = 10000 ** (-2 i / d_model), with the column index 2i in the exponent, not i."
    ),
    "own_position_only": (
        "a token's output blends the values of every token: when other words change places "
        "they carry other encodings, so the blend changes even where the token's own place "
        "does not."
    ),
    "positions_follow_words": (
        "the encodings moved with the words: an encoding belongs to a place, so put the words "
        "in sentence order first and then add PE[p] to the row in place p."
    ),
    "rotation_transposed": (
        "that matrix turns each pair the other way and gives PE[p - k]: from "
        "sin((p + k) w) = sin(p w) cos(k w) + cos(p w) sin(k w) the first row of a block is "
        "[cos(k w), sin(k w)]."
    ),
    # ---- lessons 17 and 21: the transformer block, training an attention head ----
    "ln_unbiased": (
        "layer norm divides the squared distances from the mean by d_model, not d_model - 1: "
        "the variance of a row is their plain mean (np.var's default, ddof=0)."
    ),
    "ln_not_centred": (
        "subtract the row's mean before dividing by its spread: layer norm centres each row "
        "(mean 0), then scales it (variance 1)."
    ),
    "ln_columns": (
        "layer norm works on each token's row, across its d_model features (axis=-1, "
        "keepdims=True), not down a column across the tokens."
    ),
    "ln_eps": (
        "eps is missing or not the lesson's: divide by sqrt(var + 1e-5), eps = 1e-5 inside the "
        "square root. Without it a row of equal entries gives 0 / 0; another value shifts "
        "every output a little."
    ),
    "ln_scale_invariance": (
        "layer norm divides each row by its own spread, so a row 10 times larger comes out "
        "the same (all but the tiny eps inside the root, far below 3 decimals): the attention "
        "after it sees the same rows and gives the same weights."
    ),
    "residual_from_norm": (
        "the residual adds the branch's result to the block's input X, not to LN(X): the "
        "layer norm feeds only the branch."
    ),
    "post_norm": (
        "this normalises after adding (post-norm, the original Transformer's layout); the "
        "pre-norm block normalises only the branch's input: H = X + attention(LN_1(X))."
    ),
    "no_residual": (
        "the residual is missing: each branch's result is added to its input, "
        "H = X + attention(LN_1(X)) and Y = H + MLP(LN_2(H))."
    ),
    "params_times_heads": (
        "the heads share out the columns of W_Q, W_K and W_V: the number of heads does not "
        "change the parameter count."
    ),
    "params_no_vectors": (
        "count the vectors too: b_1 (d_ff entries), b_2 (d_model) and each layer norm's "
        "gamma and beta (d_model each)."
    ),
    "dw_transposed": (
        "dW has the shape of W, (d_model, d_k): it is X^T dQ (row a: the tokens' input a "
        "times their dQ rows), not dQ^T X."
    ),
    "dx_missing_path": (
        "X made Q, K and V, so its gradient adds three paths: dX = dQ W_Q^T + dK W_K^T + dV W_V^T."
    ),
    "dw_zero_input": (
        "dW_Q = X^T dQ, so row a of dW_Q is the sum over tokens of X[i, a] dQ[i]: when only "
        "one token's row of dQ is non-zero, the rows where that token's input is 0 get no "
        "gradient."
    ),
    "gradient_ascent": (
        "the step went uphill: descent moves against the gradient, W - learning_rate * dW, "
        "with dOutput = 2 (output - target) / N; one flipped sign makes it climb."
    ),
    "mse_not_averaged": (
        "the loss is a mean, so its slope is divided by how many outputs it averages: dOutput = "
        "2 (output - target) / output.size; without it each step is that many times too long."
    ),
    "slope_not_halved": (
        "the raised and the lowered weight are 2h apart, not h: divide the change in the loss "
        "by 2 * h."
    ),
    "slope_sign": (
        "the sign is flipped: subtract the loss with the weight lowered from the loss with it "
        "raised, so a loss that grows with the weight gives a positive slope."
    ),
    "key_row_reads_value": (
        "row 0 of W_K reads each token's value, which differs from key to key, so it changes "
        "how a query's scores differ and gets a gradient (W_V, not W_K, is held fixed)."
    ),
    "key_row_reads_marker": (
        "row 1 of W_K reads the marker, the one column that tells the marked key apart: it is "
        "the row training moves most."
    ),
    "score_shift_has_gradient": (
        "softmax ignores a shift of all of a query's scores (lesson 05), so a weight that only "
        "adds the same amount to every key's score gets gradient 0 and never moves."
    ),
    # ---- lessons 23 and 24: precision, checking against a framework -------------------------
    "exponent_all_ones": (
        "the all-ones exponent is kept for inf and nan: float16's top ordinary exponent is 15, "
        "so its largest number is (2 - 2^-10) * 2^15."
    ),
    "max_power_of_two": (
        "2^16 is already past float16's range: its largest number has every mantissa bit set "
        "under the top exponent, (2 - 2^-10) * 2^15."
    ),
    "log10_not_ln": (
        "exp(x) reaches x_max at x = ln(x_max), the natural logarithm (np.log), not log10."
    ),
    "fp16_sum_exact": (
        "a float16 running total stalls: once the gap between float16 numbers at the total is "
        "twice the addend, each addition lands halfway and rounds back (ties go to even)."
    ),
    "stall_copied": (
        "the stall point depends on the addend: the total stops where the float16 gap is twice "
        "the addend, and a smaller addend meets that gap at a smaller total."
    ),
    "cast_after_product": (
        "the scores were formed in float16 and cast afterwards: Q @ K.T of float16 arrays is "
        "already inf past 65504. Cast Q, K and V to float32 first and the output back once."
    ),
    "bf16_mantissa": (
        "bfloat16 keeps float32's 8 exponent bits but only 7 mantissa bits: its largest number "
        "is (2 - 2^-7) * 2^127, a little below float32's."
    ),
    "bf16_exponent": (
        "bfloat16 has float32's range, not float16's: 8 exponent bits, so its top ordinary "
        "exponent is 127, not 15."
    ),
    "truncated": (
        "bfloat16 rounds to the nearest number, not down: round up when the dropped part is more "
        "than half a step, and at exactly half go to the even neighbour."
    ),
    "float16_step": (
        "that number is float16's: bfloat16 keeps only 7 mantissa bits, so its step is 2^(k-7) "
        "between 2^k and 2^(k+1), eight times float16's."
    ),
    "tie_away_from_even": (
        "exactly halfway between two bfloat16 numbers, rounding goes to the even one (last kept "
        "bit 0), not away from zero."
    ),
    "float16_range": (
        "inf is float16's answer past 65504; bfloat16 has float32's 8 exponent bits, so that "
        "number is finite, rounded to its step."
    ),
    "causal_bottom_right": (
        "is_causal is aligned at the top left: query i sees keys j <= i, even when n_q != n_k; "
        "the bottom-right alignment is the one cached keys need."
    ),
    "causal_top_left": (
        "with cached keys the queries are the newest n_q of n_k tokens: align at the bottom "
        "right, so query i sees keys j <= i + n_k - n_q and the last query sees every key."
    ),
    "mask_inverted": (
        "True means may attend, in attnlib and in SDPA's boolean attn_mask (the masks of "
        "nn.MultiheadAttention mean the opposite): True marks the keys a query sees."
    ),
    "scale_divides": (
        "SDPA's scale multiplies the scores, softmax(Q K^T * scale): dividing by it turns a "
        "small scale into a large one."
    ),
    "scale_twice": (
        "attnlib.attention already divides by sqrt(d_k): to get the scale s, multiply Q by "
        "s * sqrt(d_k), not by s alone."
    ),
    "tolerance_too_tight": (
        "float32 keeps about 7 significant digits and every product and sum rounds again: "
        "float32 results do not meet float64's rtol = 1e-7."
    ),
    "tolerance_too_loose": (
        "that passes, but so would many real bugs: choose the smallest tolerance the "
        "precision supports, a few units of float32's 1e-7 here."
    ),
    "v_not_swapped": (
        "V was left as (batch, n, heads, d_v): attention blends the rows of V's second-to-last "
        "axis, so V needs the same swap of axes 1 and 2 as Q and K."
    ),
    "heads_as_tokens": (
        "the arrays are (batch, n, heads, d): attention runs along the second-to-last axis, so "
        "it attended across heads. Swap axes 1 and 2 before attention and back after."
    ),
    # lessons 01-06
    "one_hot_sorted_vocab": (
        "the columns follow the vocabulary as given, vocab.index(token), not its words sorted "
        "(np.unique sorts them): with vocab = ['seeds', 'birds', 'eat'] birds is column 1."
    ),
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
    # lesson 14, rotary positions
    "rope_clockwise": (
        "the pair turned the wrong way: a turn by the angle a sends (x_1, x_2) to "
        "(x_1 cos a - x_2 sin a, x_1 sin a + x_2 cos a), counterclockwise for a > 0."
    ),
    "rope_not_rotated": (
        "nothing was turned: the query at place p turns by p theta before the dot product "
        "(and the key at place r by r theta; at place 0 that is no turn at all)."
    ),
    "rope_offset_unsigned": (
        "the score depends on the signed offset p - r, not on the distance |p - r|: turning "
        "by -a instead of +a flips the sign of each pair's sine term (q_1 k_2 - q_2 k_1 times "
        "a sine), so the two scores differ unless those terms add up to 0 (with one pair: "
        "unless q_1 k_2 - q_2 k_1 = 0)."
    ),
    "rope_exponent": (
        "the angles fall too slowly across the pairs: pair i steps by "
        "theta_i = base ** (-2 i / d), with 2 i (its first column) in the exponent, not i."
    ),
    "rope_pairs_halves": (
        "the pairs here are neighbours, columns 2i and 2i + 1 (X[:, 0::2] and X[:, 1::2]); "
        "pairing column i with column i + d / 2 is the other layout."
    ),
    "rope_mixed_layout": (
        "the angles and the pairs are laid out differently: the halves pair column i with "
        "i + d / 2, so both halves need the angles 0 .. d/2 - 1 in order, "
        "np.concatenate([cos, cos], axis=-1), not np.repeat(cos, 2, axis=-1)."
    ),
    "rope_pairs_neighbours": (
        "the pairs here are the two halves, column i with column i + d / 2 (X[:, :d // 2] "
        "and X[:, d // 2:]); pairing neighbours 2i and 2i + 1 is the other layout."
    ),
    "alibi_sign": (
        "the bias must fall as the key gets further back: B[i, j] = -m (i - j), so a key "
        "two places back loses 2m, and the query's own key gets 0."
    ),
    "alibi_top_left": (
        "with n_q queries after n_k - n_q earlier keys, query i sits at place "
        "n_k - n_q + i: measure distances from there (the bottom-right alignment)."
    ),
    "alibi_future_unmasked": (
        "keys after the query must be hidden with -inf: the formula -m (i - j) would give "
        "them a bonus, since i - j < 0 there."
    ),
    "kv_cache_append_after": (
        "the new token's key and value must be in the cache before its query attends: append "
        "first, then attend, since a token may look at itself (step 0 then has one key, not none)."
    ),
    "kv_cache_future_keys": (
        "a query attended to keys of tokens that come after it: decoding reads only the cache, "
        "the tokens up to the query's own place, so the rows must equal causal attention."
    ),
    "kv_predict_quadratic": (
        "four times is the step without a cache, which redoes the whole n x n attention; with "
        "the cache one query meets n keys, so the work grows like n."
    ),
    "kv_predict_constant": (
        "the new query still meets every cached key: twice as many keys mean twice as many dot "
        "products and twice as many value rows to blend."
    ),
    "partial_sequence": (
        "part of a sequence's cache serves no sequence: count the whole sequences that fit "
        "(//), not the fraction (/)."
    ),
    "kv_cache_no_two": (
        "the cache keeps a key and a value for every token, head and layer: the factor 2."
    ),
    "kv_cache_query_heads": (
        "the cache keeps one key and one value per key-value head (num_key_value_heads), not "
        "per query head: grouped query heads share them."
    ),
    "kv_cache_float32": "bfloat16 and float16 take 2 bytes per number; float32 takes 4.",
    "gqa_cycled": (
        "the key-value heads were repeated in cycled order (0, 1, 0, 1, ...): query head h "
        "reads key-value head h // g, so each head repeats g times in a row (np.repeat, "
        "PyTorch's repeat_interleave), not the whole stack g times."
    ),
    "gqa_predict_same": (
        "only the keys and values are shared: each query head has its own columns of W_Q, so "
        "its own queries and its own scores against the shared keys."
    ),
    "mla_no_rope": (
        "the rotary key was left out: rotary positions stop W_UK being absorbed, so each token "
        "also caches a small turned key of width d_rope, beside its latent row of width d_c."
    ),
    "cache_one_layer": (
        "that is the cache of one layer: every layer keeps its own, so multiply by the number "
        "of layers for the whole model."
    ),
    "mla_latent_twice": (
        "the latent row was counted twice: keys and values are both rebuilt from the same row c "
        "(K = C W_UK, V = C W_UV), so it is cached once, d_c + d_rope per token and layer."
    ),
    "product_one_side": (
        "only one side's average was kept: for independent entries the average of q^2 k^2 is "
        "the average of q^2 times the average of k^2, both of them."
    ),
    "product_of_means": (
        "that multiplies the averages of q and k themselves (each 0): the variance of q k needs "
        "the averages of their squares, since the mean of q k is 0."
    ),
    "alibi_heads_from_0": (
        "the exponent used h where the heads are counted from 0: head h has the slope "
        "2^(-8 (h + 1) / H), so head 0's is 2^(-8 / H), not 1."
    ),
    "mla_uk_transposed": (
        "W_UK was used the wrong way round: a key is rebuilt as k = c W_UK, a row times "
        "(d_c, d_k), and the absorbed query is q W_UK^T."
    ),
    "mla_scaled_by_d_c": (
        "the scores were divided by sqrt(d_c), the absorbed query's width: absorbing W_UK "
        "changes no score, so they are still divided by sqrt(d_k), the width of q and k."
    ),
}
