#!/usr/bin/perl
# mkidx.pl -- writes a small made-up data set in the (Fashion-)MNIST layout for the tests:
# DIR/train-images-idx3-ubyte, train-labels-idx1-ubyte (NTRAIN images) and t10k-* (NTEST), 28x28
# unsigned bytes. Image of class c: two bright rows (4 + 2c, 5 + 2c, columns 4..23) on a dim
# noisy background, so a small model learns it in a few epochs. Deterministic (own generator).
#     perl mkidx.pl DIR NTRAIN NTEST
use strict;
use warnings;

my ($dir, $ntrain, $ntest) = @ARGV;
die "usage: mkidx.pl DIR NTRAIN NTEST\n" unless defined $ntest;
my $seed = 12345;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed >> 16; }

sub write_set {
  my ($prefix, $n) = @_;
  open(my $img, '>:raw', "$dir/$prefix-images-idx3-ubyte") or die "$dir: $!\n";
  open(my $lab, '>:raw', "$dir/$prefix-labels-idx1-ubyte") or die "$dir: $!\n";
  print $img pack('N4', 0x803, $n, 28, 28);
  print $lab pack('N2', 0x801, $n);
  for my $i (0 .. $n - 1) {
    my $c = rnd() % 10;
    my @px;
    for my $r (0 .. 27) {
      for my $k (0 .. 27) {
        my $bright = ($r == 4 + 2 * $c || $r == 5 + 2 * $c) && $k >= 4 && $k <= 23;
        push @px, $bright ? 180 + rnd() % 76 : rnd() % 40;
      }
    }
    print $img pack('C*', @px);
    print $lab pack('C', $c);
  }
  close($img) or die "$!\n";
  close($lab) or die "$!\n";
}

write_set('train', $ntrain);
write_set('t10k', $ntest);
