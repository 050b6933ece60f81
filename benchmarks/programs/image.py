"""Image processing and a small convolutional network: box blur, Sobel edges, histogram
equalisation, a 2-D convolution by shifted slices, and a CNN forward pass."""

import numpy as np

from .registry import program, rng



def _image(size, small=(20, 24), large=(1500, 1500)):
    return rng().random(small if size == "small" else large)


@program("image", "3x3 box blur, edges replicated", lambda size: (_image(size),), jax=True)
def box_blur(image):
    padded = np.pad(image, 1, mode="edge")
    h, w = image.shape
    total = np.zeros_like(image)
    for i in range(3):
        for j in range(3):
            total += padded[i:i + h, j:j + w]
    return total / 9.0


@program("image", "Sobel gradient magnitude", lambda size: (_image(size),), numba=True, jax=True)
def sobel(image):
    gx = (image[:-2, 2:] + 2.0 * image[1:-1, 2:] + image[2:, 2:]
          - image[:-2, :-2] - 2.0 * image[1:-1, :-2] - image[2:, :-2])
    gy = (image[2:, :-2] + 2.0 * image[2:, 1:-1] + image[2:, 2:]
          - image[:-2, :-2] - 2.0 * image[:-2, 1:-1] - image[:-2, 2:])
    return np.sqrt(gx * gx + gy * gy)


def _gray_inputs(size):
    image = _image(size)
    return ((image ** 2 * 200.0).astype(np.uint8),)  # skewed towards dark, as equalisation needs


def _jax_histogram_equalisation(image):
    import jax.numpy as jnp

    histogram = jnp.bincount(image.ravel(), length=256)
    cdf = jnp.cumsum(histogram)
    cdf_min = cdf[jnp.argmax(cdf > 0)]
    lut = jnp.clip(jnp.round((cdf - cdf_min) * 255.0 / (image.size - cdf_min)), 0, 255).astype(jnp.uint8)
    return (lut[image],)


@program("image", "histogram equalisation of an 8-bit image", _gray_inputs, jax=_jax_histogram_equalisation)
def histogram_equalisation(image):
    histogram = np.bincount(image.ravel(), minlength=256)
    cdf = np.cumsum(histogram)
    cdf_min = cdf[np.argmax(cdf > 0)]
    lut = np.clip(np.round((cdf - cdf_min) * 255.0 / (image.size - cdf_min)), 0, 255).astype(np.uint8)
    return lut[image]


def _conv_inputs(size):
    kernel = rng().random((5, 5))
    return _image(size), kernel / kernel.sum()


@program("image", "2-D convolution (valid), one shifted slice per kernel tap", _conv_inputs, numba=True,
         jax=True)
def conv2d(image, kernel):
    kh, kw = kernel.shape
    h, w = image.shape[0] - kh + 1, image.shape[1] - kw + 1
    out = np.zeros((h, w))
    for i in range(kh):
        for j in range(kw):
            out += kernel[i, j] * image[i:i + h, j:j + w]
    return out


def _cnn_inputs(size):
    batch, side = (2, 12) if size == "small" else (64, 32)
    generator = rng()

    def weights(*shape):
        return (generator.standard_normal(shape) / np.sqrt(np.prod(shape[:-1]))).astype(np.float32)

    return (generator.random((batch, side, side, 3), dtype=np.float32), weights(3, 3, 3, 16),
            np.zeros(16, np.float32), weights(3, 3, 16, 32), np.zeros(32, np.float32), weights(32, 10),
            np.zeros(10, np.float32))


def _jax_cnn_forward(x, w1, b1, w2, b2, w3, b3):
    import jax

    def conv_relu(x, w, b):
        kh, kw = w.shape[:2]
        h, wd = x.shape[1] - kh + 1, x.shape[2] - kw + 1
        out = sum(x[:, i:i + h, j:j + wd, :] @ w[i, j] for i in range(kh) for j in range(kw))
        return jax.numpy.maximum(out + b, 0.0)

    def pool(x):
        n, h, w, c = x.shape
        return x[:, :h // 2 * 2, :w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))

    features = pool(conv_relu(pool(conv_relu(x, w1, b1)), w2, b2)).mean(axis=(1, 2))
    logits = features @ w3 + b3
    return (jax.nn.softmax(logits, axis=1),)


def _conv_relu(x, w, b):
    kh, kw = w.shape[:2]
    h, wd = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((x.shape[0], h, wd, w.shape[3]), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            out += x[:, i:i + h, j:j + wd, :] @ w[i, j]
    return np.maximum(out + b, 0.0)


def _max_pool(x):
    n, h, w, c = x.shape
    return x[:, :h // 2 * 2, :w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


@program("ml", "small CNN forward (NHWC float32): two 3x3 conv+ReLU+2x2 max-pool, global mean, dense, softmax",
         _cnn_inputs, jax=_jax_cnn_forward, rtol=1e-4,
         why="float32 sums and exp (docs/codegen.md: 4 ulp; Summation order) through three layers")
def cnn_forward(x, w1, b1, w2, b2, w3, b3):
    features = _max_pool(_conv_relu(_max_pool(_conv_relu(x, w1, b1)), w2, b2)).mean(axis=(1, 2))
    logits = features @ w3 + b3
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)
