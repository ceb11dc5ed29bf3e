import base64

import numpy as np

import srcjax.numpy as jnp
from srcjax import lax


def _constant(data, dtype, shape):
    """An array the function closes over, stored as base64 of its bytes."""
    return jnp.asarray(np.frombuffer(base64.b64decode(data), dtype).reshape(shape))


const = _constant("uB4FPylcjz+4HkU/rkdhP3E9ir+amRk+uB4FP4/CdT1mZqa/pHA9PylcH8CF67E/", np.float32, (4, 3))
const_1 = _constant("AACAPwAAgD8AAAAAAACAPw==", np.float32, (4,))
const_2 = _constant("AAAAAAAAAAAAAIA/AAAAAA==", np.float32, (4,))


def grad_logistic_loss(W, b):
    t0 = lax.dot_general(const, W, dimension_numbers=(((1,), (0,)), ((), ())))  # return _sigmoid(jnp.dot(inputs, W) + b)  (programs.py:673)
    t1 = lax.broadcast_in_dim(b, shape=(4,), broadcast_dimensions=())
    t2 = t0 + t1
    t3 = lax.broadcast_in_dim(np.float32(2.0), shape=(4,), broadcast_dimensions=())  # return 0.5 * (jnp.tanh(x / 2) + 1)  (programs.py:669)
    t4 = t2 / t3
    t5 = lax.tanh(t4)
    t6 = t5 * t5
    t7 = lax.broadcast_in_dim(np.float32(1.0), shape=(4,), broadcast_dimensions=())
    t8 = t7 - t6
    t9 = lax.broadcast_in_dim(np.float32(1.0), shape=(4,), broadcast_dimensions=())
    t10 = t5 + t9
    t11 = lax.broadcast_in_dim(np.float32(0.5), shape=(4,), broadcast_dimensions=())
    preds = t11 * t10
    t12 = preds * const_1            # label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)  (programs.py:818)
    t13 = lax.broadcast_in_dim(np.float32(1.0), shape=(4,), broadcast_dimensions=())
    t14 = t13 - preds
    t15 = t14 * const_2
    label_probs = t12 + t15
    t16 = lax.broadcast_in_dim(np.float32(-1.0), shape=(4,), broadcast_dimensions=())  # return -jnp.sum(jnp.log(label_probs))  (programs.py:819)
    label_probs_bar = t16 / label_probs
    t17 = label_probs_bar * const_2  # label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)  (programs.py:818)
    preds_bar = -t17
    t18 = label_probs_bar * const_1
    preds_bar_1 = preds_bar + t18
    t19 = t11 * preds_bar_1          # return 0.5 * (jnp.tanh(x / 2) + 1)  (programs.py:669)
    t20 = t19 * t8
    t21 = t20 / t3
    W_bar = lax.dot_general(t21, const, dimension_numbers=(((0,), (0,)), ((), ())))  # return _sigmoid(jnp.dot(inputs, W) + b)  (programs.py:673)
    return W_bar

